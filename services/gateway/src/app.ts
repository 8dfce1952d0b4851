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
import { ping } from "@tasksvc/nats";
import {
  context,
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
  within,
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
  sql: Sql;
  nc: NatsConnection;
  bodyLimit: number;
  /** The public API's resources; tests may mount extra ones on the same pipeline. */
  resources?: readonly Resource[];
  /** The JetStream blob store, whose upload and download links this gateway serves (null with S3). */
  blobs?: BlobStore | null;
  /** The replica's health (libs/runtime): /readyz fails while it starts or stops. */
  health?: Pick<Health, "state">;
  /** NATS_NAMESPACE and the services /readyz pings (every one it forwards to). */
  namespace?: string;
  services?: readonly string[];
}

const READY_CHECK_MS = 1000;

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
    const sc = span.spanContext();
    reply.header("traceparent", `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, "0")}`);
    context.with(trace.setSpan(parent, span), done);
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
    // Bounded: while Postgres restarts a query waits for the reconnect, and a flush waits for
    // NATS; a readiness probe must answer 503 meanwhile, not hang past the prober's timeout.
    // Each service it forwards to must answer a ping (some replica serving its catalog), so a
    // rollout or `docker compose up --wait` goes green only when the stack can serve.
    const natsUp = !opts.nc.isClosed();
    const services = opts.services ?? [];
    const [postgres, nats, ...answers] = await Promise.all([
      within(READY_CHECK_MS, opts.sql`select 1`),
      natsUp ? within(READY_CHECK_MS, opts.nc.flush()) : Promise.resolve("unreachable" as const),
      ...services.map((name) => (natsUp ? ping(opts.nc, opts.namespace ?? "", name, READY_CHECK_MS) : Promise.resolve(false))),
    ]);
    const state = opts.health?.state ?? "serving";
    const checks: Record<string, string> = { postgres, nats };
    services.forEach((name, i) => {
      checks[`service:${name}`] = answers[i] ? "ok" : "unreachable";
    });
    if (state !== "serving") checks["process"] = state;
    const failing = Object.entries(checks).filter(([, v]) => v !== "ok");
    if (failing.length === 0) return { status: "ready", checks };
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
