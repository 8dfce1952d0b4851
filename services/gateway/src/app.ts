import cors from "@fastify/cors";
import { AppError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyBodyParser, type FastifyInstance } from "fastify";
import type { Clients } from "./clients.js";
import { registerDocs } from "./docs.js";
import { bodyTimeoutOptions, edgeHandling, emptyPathParameter, EVERY_ANSWER_HEADERS, loggedUrl, MAX_PARAM_LENGTH } from "./edge.js";
import type { Resource } from "./operations.js";
import { type LinkRate, linkLimiter } from "./policies/link-limit.js";
import { installPipeline, type PipelineOptions } from "./pipeline.js";
import { frameworkErrors, registerProblemHandling, sendProblem } from "./problems.js";
import { resources } from "./routes/index.js";
import type { EventStreams } from "./streams/event-streams.js";
import { type LinkRouteOptions, registerTransfers } from "./transfers.js";
import type { BlobStore } from "@tasksvc/blobs";
import {
  context,
  currentTraceparent,
  extractContext,
  httpEdgeRefused,
  httpRequestDuration,
  httpRequestsInFlight,
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

export interface BuildOptions extends PipelineOptions, LinkRouteOptions {
  log: Logger;
  clients: Clients;
  bodyLimit: number;
  /** The public API's resources; tests may mount extra ones on the same pipeline. */
  resources?: readonly Resource[];
  /** The replica's live event streams (GET /v1/events/stream); unit tests may leave them out. */
  eventStreams?: EventStreams | undefined;
  /** The JetStream blob store, whose upload and download links this gateway serves (null with S3). */
  blobs?: BlobStore | null;
  /**
   * The replica's readiness (libs/runtime Health: Postgres, NATS, started and not stopping, and
   * the gateway's own checks, a ping of every service it forwards to): what /readyz answers.
   */
  health: Pick<Health, "readiness">;
  /** CORS_ORIGINS: the browser origins allowed to call the API, `*` for any; unset, no CORS at all. */
  corsOrigins?: "*" | readonly string[] | undefined;
  /** PUBLIC_BASE_URL: how clients reach the gateway; unset, http://localhost:<port>. */
  publicBaseUrl?: string | undefined;
  /** PORT, the port the gateway listens on (0: the one the kernel chooses). */
  port: number;
  /** BODY_TIMEOUT: how long a request may take to arrive whole (408 past it); absent, no limit. */
  bodyTimeoutMs?: number | undefined;
  /** ANON_RATE_LIMIT: requests per window and client address on the routes that need no credential; null or absent, no limit. */
  anonRate?: LinkRate | null | undefined;
}

/** Client addresses the anonymous routes' limit remembers at once (the oldest window goes first). */
const ANON_LIMIT_CLIENTS = 50_000;

/**
 * Where clients reach the gateway: PUBLIC_BASE_URL, else `http://localhost:<port>` (the default
 * the settings document). Never the request's Host header: a client that sends
 * `Host: attacker.example` would otherwise be handed links to that host (and a shared cache or a
 * log could carry them to others). With PORT 0 the port is the one the kernel chose, known once
 * the gateway listens, which it does before any request arrives.
 */
function publicBaseUrlOf(opts: Pick<BuildOptions, "publicBaseUrl" | "port">, app: () => FastifyInstance): () => string {
  const fixed = opts.publicBaseUrl ?? (opts.port === 0 ? undefined : `http://localhost:${opts.port}`);
  if (fixed !== undefined) return () => fixed;
  let bound: string | undefined;
  return () => {
    if (bound === undefined) {
      const address = app().server.address();
      if (typeof address !== "object" || address === null) throw new Error("PORT 0: the gateway's base URL is known only once it listens");
      bound = `http://localhost:${address.port}`;
    }
    return bound;
  };
}

/**
 * What CORS lets a browser page on an allowed origin do (decision 0019). The methods the routes
 * serve: a route with another one fails the build (onRoute in buildGateway), so that a preflight
 * never refuses a method the API serves.
 */
export const CORS_METHODS: readonly string[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/** The request headers the API reads beyond those browsers send freely. */
export const CORS_REQUEST_HEADERS: readonly string[] = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "If-Match",
  "If-None-Match",
  "traceparent",
  "tracestate",
];
/** The API's own response headers, which a page's script may read only when they are listed. */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  "x-request-id",
  "RateLimit",
  "RateLimit-Policy",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Retry-After",
  "Idempotency-Replayed",
  "ETag",
  "Location",
  "traceparent",
  "Allow",
  "WWW-Authenticate",
  "Content-Disposition",
];
/** How long a browser may reuse a preflight's answer: a changed CORS_ORIGINS is seen within it. */
const CORS_MAX_AGE_SECONDS = 600;

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
  const publicBaseUrl = publicBaseUrlOf(opts, () => app);
  const edge = edgeHandling(opts.log, publicBaseUrl);
  const { requestTimeout, headersTimeout, connectionsCheckingInterval } = bodyTimeoutOptions(opts.bodyTimeoutMs);
  const app: FastifyInstance = Fastify({
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
    http: { requireHostHeader: false, headersTimeout, connectionsCheckingInterval },
    // BODY_TIMEOUT: a request that has not arrived whole in time is answered 408 and closed (edge.ts).
    requestTimeout,
    trustProxy: opts.trustProxy ?? false,
  });
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      // OPTIONS is the CORS plugin's own preflight route.
      if (method !== "OPTIONS" && !CORS_METHODS.includes(method)) throw new Error(`${method} ${route.url}: add ${method} to CORS_METHODS (app.ts)`);
    }
  });
  app.decorate("publicBaseUrl", { getter: publicBaseUrl });
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
    reply.header("x-request-id", req.id).headers(EVERY_ANSWER_HEADERS);
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
  const anonRate = opts.anonRate;
  // One count per address for the anonymous routes and for requests whose credential is refused.
  const anonLimiter = anonRate ? linkLimiter(anonRate, { maxClients: ANON_LIMIT_CLIENTS }) : undefined;
  if (anonRate && anonLimiter) {
    // The routes that need no credential (documentation, health, unknown paths, CORS preflights)
    // cost their caller nothing, so they are counted per client address instead, before any work.
    // The link routes have their own limit (LINK_RATE_LIMIT, transfers.ts), and the operations are
    // charged per credential after authentication.
    app.addHook("onRequest", async (req) => {
      const routed = req.routeOptions.config?.operation || req.routeOptions.url?.includes("/:capability");
      // A path with an empty parameter names no route: counted like any unknown path.
      if (routed && emptyPathParameter(req) === undefined) return;
      const wait = anonLimiter.take(req.ip);
      if (wait > 0) {
        httpEdgeRefused.labels({ reason: "anonymous_rate" }).inc();
        throw new AppError(
          "rate_limited",
          `Too many requests without a credential from this address (at most ${anonRate.limit} per ${anonRate.windowMs / 1000} s); retry after the Retry-After delay.`,
          { retryAfter: wait },
        );
      }
    });
  }
  // `GET /v1/tasks/` matches `/v1/tasks/:task_id` with an empty id: no resource has one, so the
  // path is answered as the unknown route it is (404, before authentication and charging), not as
  // a charged 400 about a parameter the caller never meant to send.
  app.addHook("onRequest", async (req) => {
    const empty = emptyPathParameter(req);
    if (empty !== undefined) throw new AppError("route_not_found", `No route ${req.method} ${req.url.split("?")[0] ?? ""}.`);
  });
  if (opts.corsOrigins !== undefined) {
    // Its onRequest hook runs after the two above (request id, edge checks) and answers a
    // preflight there: no route's pipeline runs for it, so it is never authenticated or charged.
    app.register(cors, {
      origin: opts.corsOrigins === "*" ? "*" : [...opts.corsOrigins],
      methods: [...CORS_METHODS],
      allowedHeaders: [...CORS_REQUEST_HEADERS],
      exposedHeaders: [...CORS_EXPOSED_HEADERS],
      // Credentials are bearer tokens the page sends itself, never cookies: nothing to allow.
      credentials: false,
      maxAge: CORS_MAX_AGE_SECONDS,
      // Every OPTIONS is answered as a preflight: the strict mode would answer one that lacks
      // Origin or Access-Control-Request-Method with a text/plain 400 rather than a problem.
      strictPreflight: false,
    });
  }
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
      { method: req.method, url: loggedUrl(req), status: reply.statusCode, ms: Math.round(reply.elapsedTime), ...(org ? { organization_id: org } : {}) },
      "request",
    );
  });
  registerProblemHandling(app);

  app.get("/healthz", async () => ({ status: "ok" }));
  // /metrics is on the ops port only (OPS_PORT): operation counts and error rates are not for the
  // public. /healthz and /readyz are answered on both ports: load balancers and probes look here.
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

  installPipeline(app, { ...opts, ...(anonLimiter ? { refusedCredential: (ip: string) => anonLimiter.take(ip) } : {}) });
  const served = opts.resources ?? resources;
  for (const r of served) app.register(r.plugin, { clients: opts.clients, eventStreams: opts.eventStreams });
  registerTransfers(app, { store: opts.blobs ?? null, clients: opts.clients, linkRate: opts.linkRate });
  // The document's server: PUBLIC_BASE_URL, else `/` (the origin the document was fetched from),
  // not the base links use (docs.ts says why).
  registerDocs(
    app,
    served.flatMap((r) => r.operations),
    opts.publicBaseUrl ?? "/",
  );
  return app;
}
