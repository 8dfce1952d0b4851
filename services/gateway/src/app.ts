import type { BlobStore } from "@tasksvc/blobs";
import { AppError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import type { Health } from "@tasksvc/telemetry";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Clients } from "./clients.js";
import { limitAnonymous } from "./http/anonymous-limit.js";
import { checkCorsMethods, registerCors } from "./http/cors.js";
import { edgeHandling } from "./http/edge.js";
import { jsonBodies } from "./http/json-bodies.js";
import type { LinkRate } from "./http/link-limits.js";
import { observeRequests } from "./http/observe.js";
import { frameworkErrors, registerProblemHandling, sendProblem } from "./http/problems.js";
import { bodyTimeoutOptions, emptyPathParameter, MAX_PARAM_LENGTH } from "./http/requests.js";
import { type LinkRouteOptions, registerTransfers } from "./http/transfers.js";
import { registerDocs } from "./openapi/docs-page.js";
import { installPipeline, type PipelineOptions } from "./pipeline/hooks.js";
import type { Resource } from "./pipeline/operation.js";
import { resourcePlugin } from "./pipeline/serve.js";
import { resources } from "./routes/index.js";
import type { EventStreams } from "./streams/event-streams.js";

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
 * Builds the gateway (not listening: `inject()` works for unit tests): the HTTP edge (http/), the
 * request pipeline's hooks (pipeline/), then one plugin per resource (routes/), the link routes
 * and the documentation (openapi/).
 */
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
    // Requests arriving while the replica closes get a 503 problem from the edge, not fastify's bare JSON.
    return503OnClosing: false,
    // Every failure before a route runs is a problem too (decision 0010, http/edge.ts).
    clientErrorHandler: edge.clientErrorHandler,
    frameworkErrors,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: { requireHostHeader: false, headersTimeout, connectionsCheckingInterval },
    // BODY_TIMEOUT: a request that has not arrived whole in time is answered 408 and closed (the edge).
    requestTimeout,
    trustProxy: opts.trustProxy ?? false,
  });
  checkCorsMethods(app);
  app.decorate("publicBaseUrl", { getter: publicBaseUrl });
  jsonBodies(app);
  // The onRequest hooks run in this order: the request's id and span, the edge's checks, the
  // anonymous routes' limit, the empty parameter, then CORS preflights.
  observeRequests(app);
  edge.install(app);
  const refusedCredential = limitAnonymous(app, opts.anonRate);
  // `GET /v1/tasks/` matches `/v1/tasks/:task_id` with an empty id: no resource has one, so the
  // path is answered as the unknown route it is (404, before authentication and charging), not as
  // a charged 400 about a parameter the caller never meant to send.
  app.addHook("onRequest", async (req) => {
    const empty = emptyPathParameter(req);
    if (empty !== undefined) throw new AppError("route_not_found", `No route ${req.method} ${req.url.split("?")[0] ?? ""}.`);
  });
  if (opts.corsOrigins !== undefined) registerCors(app, opts.corsOrigins);
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

  installPipeline(app, { ...opts, ...(refusedCredential ? { refusedCredential } : {}) });
  const served = opts.resources ?? resources;
  for (const r of served) app.register(resourcePlugin(r), { clients: opts.clients, eventStreams: opts.eventStreams });
  registerTransfers(app, { store: opts.blobs ?? null, clients: opts.clients, linkRate: opts.linkRate });
  // The document's server: PUBLIC_BASE_URL, else `/` (the origin the document was fetched from),
  // not the base links use (docs-page.ts says why).
  registerDocs(
    app,
    served.flatMap((r) => r.operations),
    opts.publicBaseUrl ?? "/",
  );
  return app;
}
