import { identityActor, systemContext, type Identity, type RpcContext } from "@tasksvc/contracts";
import { AppError, isAppError } from "@tasksvc/errors";
import { httpEdgeRefused } from "@tasksvc/telemetry";
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import type { Authenticator } from "../auth.js";
import type { GatewayRepo } from "../repo/gateway-repo.js";
import type { InnerRequests } from "../http/inner-requests.js";
import { clientOrigin } from "../http/requests.js";
import type { Charger } from "./charger.js";
import { type CursorCodec, cursorUnwrap, signCursor } from "./cursors.js";
import { idempotencyHooks } from "./idempotency.js";
import { rateLimitHeaders } from "./limits.js";
import type { Admitted, Operation, Prepared, ServedOperation } from "./operation.js";
import { parseEntityTags } from "./preconditions.js";

interface Held {
  credentialId: string;
  key: string;
  /** Never its body: a secret shown once. */
  replayFromService: boolean;
}

interface State {
  identity: Identity;
  key?: string;
  held?: Held;
  forwarded?: boolean;
  failure?: unknown;
}

// Set on the request by these hooks and read by the later ones.
declare module "fastify" {
  interface FastifyContextConfig {
    operation?: ServedOperation;
  }
  interface FastifyRequest {
    pipeline?: State;
    admitted?: Admitted;
    prepared?: Prepared;
  }
}

export interface PipelineOptions {
  auth: Authenticator;
  repo: GatewayRepo;
  charger: Charger;
  cursors: CursorCodec;
  idempotencyLeaseMs: number;
  /** Such a request is anonymous as much as one to the docs: past the limit, the seconds to wait. */
  refusedCredential?: (ip: string) => number;
  /** A request this process injected (an MCP tool call's) comes with its identity, already authenticated. */
  inner?: Pick<InnerRequests, "identityOf">;
}

function authorize(op: Operation, identity: Identity): void {
  for (const scope of [op.scope, ...op.alsoScopes]) {
    if (!identity.scopes.includes(scope)) throw new AppError("insufficient_scope", `This operation requires the scope ${scope}, which the credential lacks.`);
  }
  if (!identity.entitlements.includes(op.entitlement)) {
    throw new AppError("feature_not_enabled", `The ${identity.plan} plan does not include ${op.entitlement}; upgrade the plan to use this operation.`);
  }
}

/**
 * Checked from the headers before any body is read, so an anonymous client costs no body buffer;
 * its refusal closes the connection (the edge's lingering close drops the unread body). Every
 * credentialed route takes this one hook, the operations' and the MCP endpoint's alike.
 */
export function authenticateHook(
  opts: Pick<PipelineOptions, "auth" | "refusedCredential" | "inner">,
): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const handed = opts.inner?.identityOf(req.raw);
    if (handed !== undefined) {
      req.pipeline = { identity: handed };
      return;
    }
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
  };
}

/** What admission needs of a request: who, which, from where, and the headers it reads. */
export interface Admission {
  identity: Identity;
  requestId: string;
  origin: { ip?: string; user_agent?: string };
  headers: Record<string, string | string[] | undefined>;
  key: string | undefined;
  /** A forwarded Idempotency-Key replay: not charged. */
  forwarded: boolean;
  publicBaseUrl: string;
}

/**
 * Charge, then scope and entitlement, then the preconditions' syntax: the admit step of every
 * operation, whether its request came over HTTP or from an MCP tool call in this process.
 */
export async function admission(
  opts: Pick<PipelineOptions, "charger">,
  op: Operation,
  a: Admission,
): Promise<{ admitted: Admitted; limits: Record<string, string> }> {
  const { identity } = a;
  const charge = a.forwarded ? null : await opts.charger.charge(identity, op.exactCharge);
  // A forwarded replay is not charged, and says where the limits stand all the same.
  const limits = rateLimitHeaders(charge ?? (await opts.charger.current(identity)));
  authorize(op, identity);
  // Before the operation runs: a malformed one is a 400, not a read.
  const ifMatch = op.preconditions === "if-match" ? parseEntityTags(a.headers["if-match"], "If-Match") : undefined;
  const ifNoneMatch = op.preconditions === undefined ? undefined : parseEntityTags(a.headers["if-none-match"], "If-None-Match");
  const ctx: RpcContext = {
    request_id: a.requestId,
    organization_id: identity.organization_id,
    user_id: identity.user_id,
    credential_id: identity.credential_id,
    scopes: identity.scopes,
    plan: identity.plan,
    actor: identityActor(identity),
    ...a.origin,
    ...(a.key === undefined ? {} : { idempotency_key: a.key }),
    ...(ifMatch === undefined ? {} : { if_match: ifMatch }),
    ...(typeof identity.limits.scans === "number" ? { scan_share: identity.limits.scans } : {}),
    // On a write, If-None-Match is the service's to check under the row lock, as If-Match is.
    ...(op.preconditions === "if-match" && ifNoneMatch !== undefined ? { if_none_match: ifNoneMatch } : {}),
  };
  const admitted: Admitted = {
    ctx,
    identity,
    charge,
    origin: a.publicBaseUrl,
    charger: opts.charger,
    ifNoneMatch: op.preconditions === "if-none-match" ? ifNoneMatch : undefined,
  };
  return { admitted, limits };
}

/**
 * `onRoute` gives each operation's route only the hooks it needs, each a closure over its
 * operation, so no hook looks the route's config up per request. The order is the contract:
 * authenticate → Idempotency-Key (a replay is answered before charging, spec 8) → charge → scope
 * and entitlement → input → the operation → sign the next cursor → store the outcome; an
 * anonymous caller therefore learns nothing about an operation's input rules. Only the input step
 * reads a body, so a stream route brings its own parser and runs through the same hooks.
 */
export function installPipeline(app: FastifyInstance, opts: PipelineOptions): void {
  const authenticate = authenticateHook(opts);

  const admit = (op: ServedOperation) =>
    async function admit(req: FastifyRequest, reply: FastifyReply): Promise<void> {
      const state = req.pipeline;
      if (!state) return;
      const { admitted, limits } = await admission(opts, op, {
        identity: state.identity,
        requestId: String(req.id),
        origin: clientOrigin(req),
        headers: req.headers,
        key: state.key,
        forwarded: state.forwarded === true,
        publicBaseUrl: req.server.publicBaseUrl,
      });
      reply.headers(limits);
      req.admitted = admitted;
    };

  // The steps that never wait are callback hooks: no promise per request for them.
  const input = (op: ServedOperation) => {
    const unwrapFor = cursorUnwrap(opts.cursors, op);
    return function input(req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
      if (!req.admitted) {
        done();
        return;
      }
      try {
        req.prepared = op.prepare({ params: req.params, query: req.query, body: req.body }, unwrapFor(req.admitted.identity.organization_id));
      } catch (e) {
        done(e instanceof Error ? e : new Error(String(e)));
        return;
      }
      reply.code(op.status);
      done();
    };
  };

  // A request refused with 429 after it was counted costs nothing: its call is given back.
  async function refundRefusal(req: FastifyRequest, _reply: FastifyReply, error: unknown): Promise<void> {
    const charge = req.admitted?.charge;
    if (charge && isAppError(error) && error.status === 429) opts.charger.refund(charge);
  }

  const keys = idempotencyHooks({ repo: opts.repo, charger: opts.charger, leaseMs: opts.idempotencyLeaseMs });
  app.addHook("onRoute", (route) => {
    const op = route.config?.operation;
    if (!op) return;
    route.onRequest = [...hooks(route.onRequest), authenticate];
    route.preHandler = [...hooks(route.preHandler), ...(op.idempotent ? [keys.claim(op.secretInResponse)] : []), admit(op), input(op)];
    route.onError = [...hooks(route.onError), refundRefusal];
    if (op.paginated) route.onSend = [...hooks(route.onSend), signCursor(opts.cursors, op)];
    if (op.idempotent) {
      route.onError = [...hooks(route.onError), keys.noteFailure];
      route.onSend = [...hooks(route.onSend), keys.storeOutcome];
    }
  });
}

function hooks<H>(h: H | H[] | undefined): H[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}
