import { AppError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
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
import {
  context,
  currentTraceparent,
  extractContext,
  httpRequestDuration,
  httpRequestsInFlight,
  registry,
  seriesCache,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingEnabled,
  type Health,
  type Span,
} from "@tasksvc/telemetry";

declare module "fastify" {
  interface FastifyRequest {
    /** The JSON body as received: Idempotency-Key compares bodies byte for byte. */
    rawBody?: string;
    /** The request's server span, when tracing is on. */
    span?: Span;
  }
}

export interface BuildOptions extends PipelineOptions {
  log: Logger;
  clients: Clients;
  bodyLimit: number;
  /** The public API's resources; tests may mount extra ones on the same pipeline. */
  resources?: readonly Resource[];
  /** The JetStream blob store, whose upload and download links this gateway serves (null with S3). */
  blobs?: BlobStore | null;
  /**
   * The replica's readiness (libs/runtime Health: Postgres, NATS, started and not stopping, and
   * the gateway's own checks, a ping of every service it forwards to): what /readyz answers.
   */
  health: Pick<Health, "readiness">;
}

const firstHeader = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

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
const httpSeries = seriesCache(httpRequestDuration);

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
  app.decorate("publicBaseUrl", opts.publicBaseUrl ?? null);
  // JSON only: fastify's text/plain parser would let a mislabelled body through.
  app.removeContentTypeParser("text/plain");
  // Fastify's own JSON parsing (proto-poisoning checks included), keeping the raw text.
  const parseJson = callbackParser(app.getDefaultJsonParser("error", "error"));
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    req.rawBody = body as string;
    parseJson(req, body as string, done);
  });

  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    httpRequestsInFlight.inc();
    // "close" comes for every response, finished or aborted (onResponse misses aborted ones).
    reply.raw.once("close", () => httpRequestsInFlight.dec());
    if (!tracingEnabled()) return done();
    // W3C trace context in, a server span for the request, and every hook, handler and RPC
    // after this one runs inside it (AsyncLocalStorage follows `done`'s continuation).
    const parent = extractContext({ get: (k) => firstHeader(req.headers[k]), set: () => undefined });
    const span = tracer().startSpan(
      `${req.method} ${req.routeOptions.url ?? "unmatched"}`,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": req.method, "http.route": req.routeOptions.url ?? "unmatched", "tasksvc.request_id": req.id },
      },
      parent,
    );
    req.span = span;
    const active = trace.setSpan(parent, span);
    const traceparent = currentTraceparent(active);
    if (traceparent) reply.header("traceparent", traceparent);
    context.with(active, done);
  });
  edge.install(app);
  app.addHook("onResponse", async (req, reply) => {
    const route = req.routeOptions.url ?? "unmatched";
    const status = reply.statusCode;
    httpSeries(`${req.method} ${route} ${status}`, { method: req.method, route, status_code: String(status) }).observe(reply.elapsedTime / 1000);
    if (req.span) {
      req.span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) req.span.setStatus({ code: SpanStatusCode.ERROR });
      req.span.end();
    }
    const org = req.pipeline?.identity.organization_id;
    req.log.info(
      { method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime), ...(org ? { organization_id: org } : {}) },
      "request",
    );
  });
  registerProblemHandling(app);

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/metrics", async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()));
  app.get("/readyz", async (req, reply) => {
    // The same readiness as every process's ops port (each check bounded to 1 s), answered as
    // the public API answers: a problem+json 503 naming what is not ready.
    const { ready, checks } = await opts.health.readiness();
    if (ready) return { status: "ready", checks };
    const failing = Object.entries(checks).filter(([, v]) => v !== "ok");
    const err = new AppError("service_unavailable", `Not ready: ${failing.map(([k, v]) => `${k} ${v}`).join(", ")}.`, { retryAfter: 1 });
    req.log.warn({ checks }, "not ready");
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
