import type { BlobStore } from "@tasksvc/blobs";
import { AppError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import type { Health } from "@tasksvc/telemetry";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Clients } from "./clients.js";
import { limitAnonymous } from "./http/anonymous-limit.js";
import { checkCorsMethods, registerCors } from "./http/cors.js";
import { edgeHandling } from "./http/edge.js";
import { registerInvitationAccept } from "./http/invitation-accept.js";
import { jsonBodies } from "./http/json-bodies.js";
import type { LinkRate } from "./http/link-limits.js";
import { registerOAuthServer } from "./http/oauth-server.js";
import { observeRequests } from "./http/observe.js";
import { innerRequests } from "./http/inner-requests.js";
import { frameworkErrors, registerProblemHandling, sendProblem } from "./http/problems.js";
import { bodyTimeoutOptions, emptyPathParameter, MAX_PARAM_LENGTH } from "./http/requests.js";
import { type LinkRouteOptions, registerTransfers } from "./http/transfers.js";
import { registerMcp } from "./mcp/server.js";
import { registerDocs } from "./openapi/docs-page.js";
import type { OAuthIssuer } from "./oauth/issuer.js";
import { directRunner } from "./pipeline/direct.js";
import { authenticateHook, installPipeline, type PipelineOptions } from "./pipeline/hooks.js";
import type { Resource } from "./pipeline/operation.js";
import { resourcePlugin } from "./pipeline/serve.js";
import { resources } from "./routes/index.js";
import type { EventStreams } from "./streams/event-streams.js";

export interface BuildOptions extends PipelineOptions, LinkRouteOptions {
  log: Logger;
  clients: Clients;
  bodyLimit: number;
  /** Tests may mount extra ones on the same pipeline. */
  resources?: readonly Resource[];
  eventStreams?: EventStreams | undefined;
  /** Null with S3: links then go to S3 itself, not through this gateway. */
  blobs?: BlobStore | null;
  health: Pick<Health, "readiness">;
  /** Unset: no CORS at all. */
  corsOrigins?: "*" | readonly string[] | undefined;
  publicBaseUrl?: string | undefined;
  port: number;
  /** Absent: no limit. */
  bodyTimeoutMs?: number | undefined;
  /** Null or absent: no limit. */
  anonRate?: LinkRate | null | undefined;
  /** Per client address on POST /v1/invitations/accept; null or absent: no limit. */
  acceptRate?: LinkRate | null | undefined;
  /** Signs and checks the access tokens of the organizations' own OAuth clients. */
  oauthIssuer: OAuthIssuer;
}

/**
 * Never the request's Host header: a client sending `Host: attacker.example` would otherwise be
 * handed links to that host (and a shared cache or a log could carry them to others). With PORT 0
 * the port is known once the gateway listens, which it does before any request arrives.
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

/** Not listening, so `inject()` works for unit tests. */
export function buildGateway(opts: BuildOptions): FastifyInstance {
  const publicBaseUrl = publicBaseUrlOf(opts, () => app);
  const edge = edgeHandling(opts.log, publicBaseUrl);
  const inner = innerRequests();
  const { requestTimeout, headersTimeout, connectionsCheckingInterval } = bodyTimeoutOptions(opts.bodyTimeoutMs);
  const app: FastifyInstance = Fastify({
    loggerInstance: opts.log as FastifyBaseLogger,
    // One access line per request is written by our onResponse hook instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    // A caller-supplied request id is not trusted to be unique (spec 7).
    genReqId: (raw) => inner.requestIdOf(raw) ?? edge.requestId(raw),
    requestIdHeader: false,
    bodyLimit: opts.bodyLimit,
    // Requests arriving while the replica closes get a 503 problem from the edge, not fastify's bare JSON.
    return503OnClosing: false,
    // Every failure before a route runs is a problem too (decision 0010).
    clientErrorHandler: edge.clientErrorHandler,
    frameworkErrors,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: { requireHostHeader: false, headersTimeout, connectionsCheckingInterval },
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
  // `GET /v1/tasks/` matches `/v1/tasks/:task_id` with an empty id: answered as the unknown route it
  // is (404, before authentication and charging), not as a charged 400 about a parameter.
  app.addHook("onRequest", (req, _reply, done) => {
    const empty = emptyPathParameter(req);
    done(empty === undefined ? undefined : new AppError("route_not_found", `No route ${req.method} ${req.url.split("?")[0] ?? ""}.`));
  });
  if (opts.corsOrigins !== undefined) registerCors(app, opts.corsOrigins);
  registerProblemHandling(app);

  app.get("/healthz", async () => ({ status: "ok" }));
  // /metrics is on the ops port only: operation counts and error rates are not for the public.
  app.get("/readyz", async (req, reply) => {
    const { ready, checks } = await opts.health.readiness();
    if (ready) return { status: "ready", checks };
    const failing = Object.entries(checks).filter(([, v]) => v !== "ok");
    const err = new AppError("service_unavailable", `Not ready: ${failing.map(([k, v]) => `${k} ${v}`).join(", ")}.`, { retryAfter: 1 });
    req.log.warn({ checks }, "not ready");
    return sendProblem(reply, err);
  });

  const credentials = { ...opts, inner, ...(refusedCredential ? { refusedCredential } : {}) };
  installPipeline(app, credentials);
  const served = opts.resources ?? resources;
  for (const r of served) app.register(resourcePlugin(r), { clients: opts.clients, eventStreams: opts.eventStreams });
  registerTransfers(app, { store: opts.blobs ?? null, clients: opts.clients, linkRate: opts.linkRate });
  registerInvitationAccept(app, { clients: opts.clients, rate: opts.acceptRate });
  registerOAuthServer(app, { clients: opts.clients, auth: opts.auth, issuer: opts.oauthIssuer });
  registerMcp(app, {
    operations: served.flatMap((r) => r.operations),
    authenticate: authenticateHook(credentials),
    inner,
    direct: directRunner({ charger: opts.charger, cursors: opts.cursors, clients: opts.clients }),
    authorizationServer: () => opts.oauthIssuer.issuer(),
  });
  // PUBLIC_BASE_URL, else `/` (the origin the document was fetched from), not the base links use (docs-page.ts says why).
  registerDocs(
    app,
    served.flatMap((r) => r.operations),
    opts.publicBaseUrl ?? "/",
  );
  return app;
}
