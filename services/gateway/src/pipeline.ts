import { httpEdgeRefused, idempotencyOutcomes } from "@tasksvc/telemetry";
import { systemContext, type Identity, type RpcContext } from "@tasksvc/contracts";
import { databaseErrorAsAppError } from "@tasksvc/db";
import { AppError, isAppError, toProblem } from "@tasksvc/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import type { Authenticator } from "./auth.js";
import type { Operation, ServedOperation, UnwrapCursor } from "./operations.js";
import { signNextCursor, type CursorCodec } from "./policies/cursors.js";
import { parseEntityTags } from "./policies/preconditions.js";
import { claimIdempotency, parseIdempotencyKey, requestFingerprint } from "./policies/idempotency.js";
import { rateLimitHeaders, type Charger } from "./policies/limits.js";
import type { GatewayRepo } from "./repo/gateway-repo.js";

export interface PipelineOptions {
  auth: Authenticator;
  repo: GatewayRepo;
  charger: Charger;
  cursors: CursorCodec;
  /**
   * How long an Idempotency-Key stays claimed by an execution that never reports back. The
   * service records the key itself and answers a second execution from that record, so the claim
   * only has to outlive this replica's own wait for the service.
   */
  idempotencyLeaseMs: number;
  /**
   * Counts a request whose credential was refused against its client address (ANON_RATE_LIMIT:
   * such a request is anonymous as much as one to the docs); answers the seconds to wait when
   * the address is past its limit, else 0. Absent: no limit.
   */
  refusedCredential?: (ip: string) => number;
}

/** An Idempotency-Key this request holds: its outcome is stored (or the key given back) on the way out. */
interface Held {
  credentialId: string;
  key: string;
  /** Store the success as "replay from the service", never its body (a secret shown once). */
  replayFromService: boolean;
}

/** Per-request pipeline state, kept off the request's public shape. */
interface State {
  identity: Identity;
  key?: string;
  held?: Held;
  /** An Idempotency-Key replay forwarded to the service (its outcome held a secret): never charged. */
  forwarded?: boolean;
  /** The error the request failed with, seen by onError before it is rendered. */
  failure?: unknown;
}

declare module "fastify" {
  interface FastifyRequest {
    pipeline?: State;
  }
}

const JSON_TYPE = "application/json; charset=utf-8";
const PROBLEM_TYPE = "application/problem+json; charset=utf-8";

function authorize(op: Operation, identity: Identity): void {
  if (!identity.scopes.includes(op.scope)) {
    throw new AppError("insufficient_scope", `This operation requires the scope ${op.scope}, which the credential lacks.`);
  }
  if (!identity.entitlements.includes(op.entitlement)) {
    throw new AppError("feature_not_enabled", `The ${identity.plan} plan does not include ${op.entitlement}; upgrade the plan to use this operation.`);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The request pipeline of every public operation, as fastify hooks driven by each route's
 * `config.operation`: when a route with an operation is added, `onRoute` gives it the hooks its
 * operation needs (the Idempotency-Key steps only where the operation is idempotent, cursor
 * signing only where it is paginated), each a closure over that operation. Routes without one
 * (/healthz, /docs) get none, and no hook looks the route's config up per request.
 *
 * The order is the contract: authenticate (from the headers, before the body is read) → Idempotency-Key (a replay is answered here, before
 * charging: replays are never charged, spec 8) → charge → scope and entitlement → input (query,
 * cursor, path, body) → the operation → sign the next cursor → store the outcome under the key.
 * An anonymous caller therefore learns nothing about an operation's input rules.
 *
 * Nothing here reads the body except the input step, and only when the operation declares a
 * `body` schema: a route whose body is a stream registers its own content-type parser in its own
 * plugin and runs through the same hooks.
 */
export function installPipeline(app: FastifyInstance, opts: PipelineOptions): void {
  // The same for every operation: one function, not one per route.
  // An onRequest hook: the credential is checked from the headers before any body is read, so an
  // anonymous client costs no body buffer. Its refusal closes the connection (the unread body is
  // then dropped by edge.ts's lingering close, never read into memory).
  async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const base = systemContext(String(req.id));
    try {
      req.pipeline = { identity: await opts.auth.authenticate(req.headers.authorization, base) };
    } catch (e) {
      reply.header("connection", "close");
      // Guessing keys from one address is anonymous traffic: past its limit, 429 instead of 401.
      const wait = isAppError(e) && e.status === 401 ? (opts.refusedCredential?.(req.ip) ?? 0) : 0;
      if (wait > 0) {
        httpEdgeRefused.labels({ reason: "anonymous_rate" }).inc();
        throw new AppError("rate_limited", "Too many requests with a refused credential from this address; retry after the Retry-After delay.", {
          retryAfter: wait,
        });
      }
      throw e;
    }
  }

  const idempotency = (op: ServedOperation) =>
    async function idempotency(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
      const state = req.pipeline;
      if (!state) return undefined;
      let key: string | undefined;
      try {
        key = parseIdempotencyKey(req.headers["idempotency-key"]);
      } catch (e) {
        // A malformed key is an authenticated 400 like any other: it costs its call.
        reply.headers(rateLimitHeaders(await opts.charger.charge(state.identity)));
        throw e;
      }
      if (key === undefined) return undefined;
      state.key = key;
      const fingerprint = requestFingerprint(req.method, req.url, req.rawBody);
      const claim = await claimIdempotency(opts.repo, state.identity.credential_id, key, fingerprint, opts.idempotencyLeaseMs);
      if (claim.kind === "replay") {
        idempotencyOutcomes.inc({ outcome: "replayed" });
        // Uncharged, yet it carries the rate-limit headers the operation's answers carry: the
        // counters as they stand. Answering from a hook ends the request here: no later hook and
        // no handler runs.
        const counters = rateLimitHeaders(await opts.charger.current(state.identity));
        return reply.code(claim.status).headers(claim.headers).headers(counters).header("idempotency-replayed", "true").send(claim.body);
      }
      if (claim.kind === "forward") {
        // The service holds this outcome (with its secret sealed) and answers it again for the
        // same key; nothing is held or stored here, and like any replay it is not charged
        // (spec 8). Scope and entitlement are still checked: a secret goes only to a credential
        // that may see it now.
        state.forwarded = true;
        idempotencyOutcomes.inc({ outcome: "replayed" });
        reply.header("idempotency-replayed", "true");
        return undefined;
      }
      state.held = { credentialId: claim.credentialId, key: claim.key, replayFromService: op.secretInResponse };
      idempotencyOutcomes.inc({ outcome: "first" });
      return undefined;
    };

  const admit = (op: ServedOperation) =>
    async function admit(req: FastifyRequest, reply: FastifyReply): Promise<void> {
      const state = req.pipeline;
      if (!state) return;
      const { identity } = state;
      const charge = state.forwarded ? null : await opts.charger.charge(identity, op.exactCharge);
      // A forwarded replay is not charged, and says where the limits stand all the same.
      reply.headers(rateLimitHeaders(charge ?? (await opts.charger.current(identity))));
      authorize(op, identity);
      // Conditional headers are checked before the operation runs: a malformed one is a 400, not a read.
      const ifMatch = op.preconditions === "if-match" ? parseEntityTags(req.headers["if-match"], "If-Match") : undefined;
      const ifNoneMatch = op.preconditions === undefined ? undefined : parseEntityTags(req.headers["if-none-match"], "If-None-Match");
      const ctx: RpcContext = {
        request_id: String(req.id),
        organization_id: identity.organization_id,
        user_id: identity.user_id,
        credential_id: identity.credential_id,
        scopes: identity.scopes,
        plan: identity.plan,
        ...(state.key === undefined ? {} : { idempotency_key: state.key }),
        ...(ifMatch === undefined ? {} : { if_match: ifMatch }),
        // On a write, If-None-Match is the service's to check under the row lock, as If-Match is.
        ...(op.preconditions === "if-match" && ifNoneMatch !== undefined ? { if_none_match: ifNoneMatch } : {}),
      };
      req.admitted = {
        ctx,
        identity,
        charge,
        origin: req.server.publicBaseUrl,
        charger: opts.charger,
        ifNoneMatch: op.preconditions === "if-none-match" ? ifNoneMatch : undefined,
      };
    };

  // The steps that never wait are callback hooks: no promise per request for them.
  const input = (op: ServedOperation) => {
    // A cursor is the caller's organization's: the unwrap of a paginated request closes over it.
    const unwrapFor =
      (organization: string): UnwrapCursor =>
      (query, after) => {
        const cursor = opts.cursors.open(op.url, query, after);
        return (params) => cursor.position({ organization, params });
      };
    const noCursor: UnwrapCursor = () => {
      throw new Error(`${op.method} ${op.url} is not paginated`);
    };
    return function input(req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
      if (!req.admitted) {
        done();
        return;
      }
      try {
        const unwrap = op.paginated ? unwrapFor(req.admitted.identity.organization_id) : noCursor;
        req.prepared = op.prepare({ params: req.params, query: req.query, body: req.body }, unwrap);
      } catch (e) {
        done(e instanceof Error ? e : new Error(String(e)));
        return;
      }
      reply.code(op.status);
      done();
    };
  };

  /**
   * The next cursor of a paginated list, signed and bound to the list's query, the caller's
   * organization and the route's path parameters: on the encoded body, which is the service's
   * own bytes when the route relayed them (decision 0020).
   */
  const signCursor = (op: ServedOperation) =>
    function signCursor(req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
      const query = req.prepared?.query;
      const admitted = req.admitted;
      if (reply.statusCode !== op.status || !admitted || !isRecord(query) || (typeof payload !== "string" && !Buffer.isBuffer(payload))) {
        done(null, payload);
        return;
      }
      const owner = { organization: admitted.identity.organization_id, params: req.prepared?.params };
      try {
        done(
          null,
          signNextCursor(typeof payload === "string" ? Buffer.from(payload) : payload, (raw) => opts.cursors.wrap(op.url, query, owner, raw)),
        );
      } catch (e) {
        done(e instanceof Error ? e : new Error(String(e)));
      }
    };

  async function noteFailure(req: FastifyRequest, _reply: FastifyReply, error: unknown): Promise<void> {
    if (req.pipeline) req.pipeline.failure = error;
  }

  // A request refused with 429 after it was counted (a batch the limits cannot cover, a stream
  // past its limit, a service's fairness refusal) costs nothing: its call is given back.
  async function refundRefusal(req: FastifyRequest, _reply: FastifyReply, error: unknown): Promise<void> {
    const charge = req.admitted?.charge;
    if (charge && isAppError(error) && error.status === 429) opts.charger.refund(charge);
  }

  // The outcome under the key is stored before the response leaves, so a retry that follows the
  // response always finds it.
  async function storeOutcome(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const state = req.pipeline;
    const held = state?.held;
    if (!state || !held) return payload;
    // Once per request: if storing fails, the error's own response passes here again.
    state.held = undefined;
    // A relayed reply arrives as its bytes (decision 0020).
    const body = typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString("utf8") : JSON.stringify(payload);
    const failure = state.failure;
    try {
      if (failure === undefined) {
        // The ETag and Location too: a replay is the same answer, headers that describe its body included.
        const headers: Record<string, string> = { "content-type": JSON_TYPE };
        for (const name of ["etag", "location"]) {
          const value = reply.getHeader(name);
          if (typeof value === "string") headers[name] = value;
        }
        await opts.repo.storeIdempotentOutcome(held.credentialId, held.key, reply.statusCode, body, headers, held.replayFromService);
      } else if (isAppError(failure) && failure.status < 500 && failure.status !== 429) {
        // Outcomes the client caused are stored and replayed (400s included).
        const problem = JSON.stringify(toProblem(failure, String(req.id), req.server.publicBaseUrl));
        const headers = { "content-type": PROBLEM_TYPE, ...(failure.etag === undefined ? {} : { etag: failure.etag }) };
        await opts.repo.storeIdempotentOutcome(held.credentialId, held.key, failure.status, problem, headers);
      } else {
        // A refusal before execution (429) or an unknown outcome (5xx) gives the key back: the
        // retry runs again and the service's own idempotency record prevents a twin.
        await opts.repo.releaseIdempotencyKey(held.credentialId, held.key).catch((err: unknown) => req.log.error({ err }, "could not release idempotency key"));
      }
    } catch (e) {
      await opts.repo.releaseIdempotencyKey(held.credentialId, held.key).catch((err: unknown) => req.log.error({ err }, "could not release idempotency key"));
      // The answer becomes this failure, rendered here: an error thrown from onSend would reach
      // fastify's fallback handler (its own JSON, the old status) instead of problems.ts. A
      // database that is down is a 503 to retry with the same key: the service's own record
      // answers the retry if the operation ran.
      const known = databaseErrorAsAppError(e);
      if (known) req.log.warn({ err: e }, "could not store the Idempotency-Key outcome");
      else req.log.error({ err: e }, "could not store the Idempotency-Key outcome");
      const err = known ?? new AppError("internal_error", "An unexpected error occurred. Quote the request id when contacting support.");
      reply.code(err.status).header("content-type", PROBLEM_TYPE);
      if (err.retryAfter !== undefined) reply.header("retry-after", String(err.retryAfter));
      return JSON.stringify(toProblem(err, String(req.id), req.server.publicBaseUrl));
    }
    return payload;
  }

  app.addHook("onRoute", (route) => {
    const op = route.config?.operation;
    if (!op) return;
    route.onRequest = [...hooks(route.onRequest), authenticate];
    route.preHandler = [...hooks(route.preHandler), ...(op.idempotent ? [idempotency(op)] : []), admit(op), input(op)];
    route.onError = [...hooks(route.onError), refundRefusal];
    if (op.paginated) route.onSend = [...hooks(route.onSend), signCursor(op)];
    if (op.idempotent) {
      route.onError = [...hooks(route.onError), noteFailure];
      route.onSend = [...hooks(route.onSend), storeOutcome];
    }
  });
}

/** A route option's hooks as a list (fastify takes one function or an array). */
function hooks<H>(h: H | H[] | undefined): H[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}
