import { AppError } from "@tasksvc/errors";
import type { Sql } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { NatsConnection } from "@tasksvc/nats";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyBodyParser, type FastifyInstance } from "fastify";
import type { Clients } from "./clients.js";
import { registerDocs } from "./docs.js";
import { edgeHandling, MAX_PARAM_LENGTH } from "./edge.js";
import type { Resource } from "./operations.js";
import { installPipeline, type PipelineOptions } from "./pipeline.js";
import { frameworkErrors, registerProblemHandling, sendProblem } from "./problems.js";
import { resources } from "./routes/index.js";
import { registerTransfers } from "./transfers.js";
import type { BlobStore } from "@tasksvc/blobs";

declare module "fastify" {
  interface FastifyRequest {
    /** The JSON body as received: Idempotency-Key compares bodies byte for byte. */
    rawBody?: string;
  }
}

export interface BuildOptions extends PipelineOptions {
  log: Logger;
  clients: Clients;
  sql: Sql;
  nc: NatsConnection;
  bodyLimit: number;
  /** The public API's resources; tests may mount extra ones on the same pipeline. */
  resources?: readonly Resource[];
  /** The JetStream blob store, whose upload and download links this gateway serves (null with S3). */
  blobs?: BlobStore | null;
}

const READY_CHECK_MS = 1000;

/** "ok" when `p` settles well within `ms`, else "unreachable". */
function within(ms: number, p: PromiseLike<unknown>): Promise<"ok" | "unreachable"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"unreachable">((resolve) => {
    timer = setTimeout(() => resolve("unreachable"), ms);
  });
  const settled = Promise.resolve(p).then(
    () => "ok" as const,
    () => "unreachable" as const,
  );
  return Promise.race([settled, late]).finally(() => clearTimeout(timer));
}

/** Fastify's JSON parser in its callback form: it answers through `done` and returns nothing. */
type CallbackBodyParser = Exclude<FastifyBodyParser<string>, (...args: never[]) => Promise<unknown>>;

/**
 * Fastify types its default JSON parser as either a callback parser or an async one (whose
 * promise would need awaiting). It is the callback one; checked once, when the gateway is built,
 * so the application/json parser below can call it with `done` and no promise to handle.
 */
function callbackParser(parser: FastifyBodyParser<string>): CallbackBodyParser {
  if (parser.length !== 3) throw new Error("fastify's default JSON parser no longer takes a `done` callback; update the application/json parser in app.ts");
  return parser as CallbackBodyParser;
}

/**
 * Builds the gateway (not listening: `inject()` works for unit tests): the HTTP edge, the request
 * pipeline's hooks (pipeline.ts), then one plugin per resource (routes/).
 */
export function buildGateway(opts: BuildOptions): FastifyInstance {
  const edge = edgeHandling(opts.log);
  const app = Fastify({
    loggerInstance: opts.log as FastifyBaseLogger,
    // One access line per request is written by our onResponse hook instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    // Every request gets a fresh id; a caller-supplied one is not trusted to be unique (spec 7).
    genReqId: edge.requestId,
    requestIdHeader: false,
    bodyLimit: opts.bodyLimit,
    // Requests arriving while the replica closes get a 503 problem from edge.ts, not fastify's bare JSON.
    return503OnClosing: false,
    // Every failure before a route runs is a problem too (decision 0010, edge.ts).
    clientErrorHandler: edge.clientErrorHandler,
    frameworkErrors,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: { requireHostHeader: false },
  });
  // JSON only: fastify's text/plain parser would let a mislabelled body through.
  app.removeContentTypeParser("text/plain");
  // Fastify's own JSON parsing (proto-poisoning checks included), keeping the raw text.
  const parseJson = callbackParser(app.getDefaultJsonParser("error", "error"));
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    req.rawBody = body as string;
    parseJson(req, body as string, done);
  });

  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });
  edge.install(app);
  app.addHook("onResponse", async (req, reply) => {
    req.log.info({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, "request");
  });
  registerProblemHandling(app);

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (req, reply) => {
    // Bounded: while Postgres restarts a query waits for the reconnect, and a flush waits for
    // NATS; a readiness probe must answer 503 meanwhile, not hang past the prober's timeout.
    const checks = await Promise.all([
      within(READY_CHECK_MS, opts.sql`select 1`),
      opts.nc.isClosed() ? Promise.resolve("unreachable") : within(READY_CHECK_MS, opts.nc.flush()),
    ]);
    const [postgres, nats] = checks;
    if (postgres === "ok" && nats === "ok") return { status: "ready", checks: { postgres, nats } };
    const err = new AppError("service_unavailable", `Not ready: postgres ${postgres}, nats ${nats}.`, { retryAfter: 1 });
    req.log.warn({ postgres, nats }, "not ready");
    return sendProblem(reply, err);
  });

  installPipeline(app, opts);
  const served = opts.resources ?? resources;
  for (const r of served) app.register(r.plugin, { clients: opts.clients });
  registerTransfers(app, { store: opts.blobs ?? null, clients: opts.clients });
  registerDocs(
    app,
    served.flatMap((r) => r.operations),
  );
  return app;
}
