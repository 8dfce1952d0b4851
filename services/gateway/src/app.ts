import type { Identity, RpcContext } from "@tasksvc/contracts";
import { AppError, isAppError, toProblem, validationError } from "@tasksvc/errors";
import type { Sql } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { NatsConnection } from "@tasksvc/nats";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from "fastify";
import type { z } from "zod";
import type { Authenticator } from "./auth.js";
import type { CursorCodec } from "./policies/cursors.js";
import { claimIdempotency, parseIdempotencyKey, requestFingerprint, type Claim } from "./policies/idempotency.js";
import { rateLimitHeaders, type Charger } from "./policies/limits.js";
import { registerDocs } from "./docs.js";
import { edgeHandling, MAX_PARAM_LENGTH } from "./edge.js";
import { frameworkErrors, registerProblemHandling, sendProblem } from "./problems.js";
import type { GatewayRepo } from "./repo/gateway-repo.js";
import { routes, WithStatus, type Clients, type RouteDef } from "./routes.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The JSON body as received: Idempotency-Key compares bodies byte for byte. */
    rawBody?: string;
  }
}

export interface BuildOptions {
  log: Logger;
  auth: Authenticator;
  clients: Clients;
  sql: Sql;
  nc: NatsConnection;
  bodyLimit: number;
  repo: GatewayRepo;
  charger: Charger;
  cursors: CursorCodec;
  /** How long an Idempotency-Key stays claimed by an execution that never reports back. */
  idempotencyLeaseMs: number;
  /** The same on routes whose service records the key itself (a crashed replica's claim frees sooner). */
  serviceIdempotencyLeaseMs?: number;
  /** The route table; tests may mount extra routes on the same pipeline. */
  routes?: RouteDef[];
}

function parse<S extends z.ZodType>(schema: S | undefined, value: unknown, what: string): z.output<S> | undefined {
  if (!schema) return undefined;
  const r = schema.safeParse(value ?? (what === "The request body" ? undefined : {}));
  if (!r.success) throw validationError(r.error, "", what);
  return r.data;
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

function baseContext(req: FastifyRequest): RpcContext {
  return { request_id: String(req.id), organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };
}

function authorize(def: RouteDef, identity: Identity): void {
  if (!identity.scopes.includes(def.scope)) {
    throw new AppError("insufficient_scope", `This operation requires the scope ${def.scope}, which the credential lacks.`);
  }
  if (!identity.entitlements.includes(def.entitlement)) {
    throw new AppError("feature_not_enabled", `The ${identity.plan} plan does not include ${def.entitlement}; upgrade the plan to use this operation.`);
  }
}

/**
 * Builds the gateway (not listening: `inject()` works for unit tests). Every route runs
 * authenticate → authorize → validate → forward, in that order, so that an anonymous caller learns
 * nothing about a route's input rules.
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
  const parseJson = app.getDefaultJsonParser("error", "error");
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

  const leaseMs = (def: RouteDef) => (def.serviceIdempotency ? (opts.serviceIdempotencyLeaseMs ?? opts.idempotencyLeaseMs) : opts.idempotencyLeaseMs);
  for (const def of opts.routes ?? routes) {
    app.route({
      method: def.method,
      url: def.url,
      handler: async (req, reply) => {
        const base = baseContext(req);
        const identity = await opts.auth.authenticate(req.headers.authorization, base);

        // An idempotent replay is answered before charging: replays are never charged (spec 8).
        let claim: Claim | undefined;
        let key: string | undefined;
        try {
          key = def.idempotent ? parseIdempotencyKey(req.headers["idempotency-key"]) : undefined;
        } catch (e) {
          // A malformed key is an authenticated 400 like any other: it costs its call.
          reply.headers(rateLimitHeaders(await opts.charger.charge(identity)));
          throw e;
        }
        if (key !== undefined) {
          claim = await claimIdempotency(opts.repo, identity.credential_id, key, requestFingerprint(req.method, req.url, req.rawBody), leaseMs(def), !def.serviceIdempotency);
          if (claim.kind === "replay") {
            return reply.code(claim.status).headers(claim.headers).header("idempotency-replayed", "true").send(claim.body);
          }
        }
        const held = claim?.kind === "claimed" ? claim : undefined;

        try {
          const charge = await opts.charger.charge(identity, def.exactCharge === true);
          reply.headers(rateLimitHeaders(charge));
          authorize(def, identity);
          const ctx: RpcContext = {
            ...base,
            organization_id: identity.organization_id,
            user_id: identity.user_id,
            credential_id: identity.credential_id,
            scopes: identity.scopes,
            plan: identity.plan,
            ...(key === undefined ? {} : { idempotency_key: key }),
          };
          const query = parse(def.query, req.query, "The query string") as Record<string, unknown> | undefined;
          if (def.paginated && query && typeof query["after"] === "string") {
            query["after"] = opts.cursors.unwrap(def.url, query, query["after"]);
          }
          const input = {
            params: parse(def.params, req.params, "The path"),
            query,
            body: parse(def.body, req.body, "The request body"),
            ctx,
            identity,
            charge,
          };
          let data = await def.forward(opts.clients, input);
          let status = def.status;
          if (data instanceof WithStatus) {
            status = data.status;
            data = data.body;
          }
          if (def.paginated && query) {
            const p = data as { next_cursor: string | null };
            if (p.next_cursor !== null) p.next_cursor = opts.cursors.wrap(def.url, query, p.next_cursor);
          }
          const body = JSON.stringify(data);
          if (held) await opts.repo.storeIdempotentOutcome(held.credentialId, held.key, status, body, { "content-type": "application/json; charset=utf-8" }, !def.serviceIdempotency);
          return reply.code(status).type("application/json; charset=utf-8").send(body);
        } catch (e) {
          if (held) {
            // Outcomes the client caused are stored and replayed (400s included). A refusal before
            // execution (429) or an unknown outcome (5xx) gives the key back: the retry runs again
            // and the service's own idempotency record prevents a twin.
            const stored = isAppError(e) && e.status < 500 && e.status !== 429;
            if (stored) {
              const problem = JSON.stringify(toProblem(e, String(req.id)));
              await opts.repo.storeIdempotentOutcome(held.credentialId, held.key, e.status, problem, { "content-type": "application/problem+json; charset=utf-8" }, !def.serviceIdempotency);
            } else {
              await opts.repo.releaseIdempotencyKey(held.credentialId, held.key).catch((err: unknown) => req.log.error({ err }, "could not release idempotency key"));
            }
          }
          throw e;
        }
      },
    });
  }
  registerDocs(app, opts.routes ?? routes);
  return app;
}
