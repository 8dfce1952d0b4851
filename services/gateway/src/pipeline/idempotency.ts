import { createHash } from "node:crypto";
import { IDEMPOTENCY_KEY_PATTERN } from "@tasksvc/contracts";
import { databaseErrorAsAppError } from "@tasksvc/db";
import { AppError, fieldError, isAppError, toProblem } from "@tasksvc/errors";
import { idempotencyOutcomes } from "@tasksvc/telemetry";
import type { FastifyReply, FastifyRequest } from "fastify";
import { turnBatches } from "@tasksvc/runtime";
import type { Claimed, GatewayRepo, Outcome } from "../repo/gateway-repo.js";
import type { Charger } from "./charger.js";
import { rateLimitHeaders } from "./limits.js";
import type { OperationSpec } from "./operation.js";

// The gateway's record is a fast path: the service behind an idempotent operation records the
// key with its result in its own transaction.

export function checkIdempotencyDeclared(spec: OperationSpec): void {
  // The gateway's Idempotency-Key compares bodies byte for byte, which a stream it never buffers
  // does not allow; an upload that needs a key must bring a digest of its own.
  if (spec.kind === "stream" && (spec.idempotent || spec.body))
    throw new Error(`${spec.method} ${spec.url}: a stream operation has no body schema and no Idempotency-Key`);
  // Only an Idempotency-Key outcome is held back and forwarded again; elsewhere the flag would do nothing.
  if (spec.secretInResponse && !spec.idempotent) throw new Error(`${spec.method} ${spec.url}: secretInResponse is for an idempotent operation`);
}

export type Claim =
  | { kind: "claimed"; credentialId: string; key: string }
  | { kind: "replay"; status: number; body: string; headers: Record<string, string> }
  /** Its outcome held a secret and is the service's to replay: run it again, unheld. */
  | { kind: "forward" };

export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const v = Array.isArray(header) ? header.join(",") : header;
  if (!IDEMPOTENCY_KEY_PATTERN.test(v)) throw fieldError("/Idempotency-Key", "must be 1-255 visible ASCII characters");
  return v;
}

export function requestFingerprint(method: string, url: string, rawBody: string | undefined): string {
  return createHash("sha256")
    .update(`${method}\n${url}\n`)
    .update(rawBody ?? "")
    .digest("hex");
}

export async function claimIdempotency(
  repo: Pick<GatewayRepo, "idempotencyRecord">,
  claimKey: (c: Claimed) => Promise<boolean>,
  credentialId: string,
  key: string,
  fingerprint: string,
): Promise<Claim> {
  if (await claimKey({ credentialId, key, fingerprint })) return { kind: "claimed", credentialId, key };
  const rec = await repo.idempotencyRecord(credentialId, key);
  // Gone between the two statements (released after a 5xx, or swept): claim again once.
  if (!rec) {
    if (await claimKey({ credentialId, key, fingerprint })) return { kind: "claimed", credentialId, key };
    throw new AppError("idempotency_in_progress", "A request with this Idempotency-Key is being executed; retry shortly.", { retryAfter: 1 });
  }
  if (rec.fingerprint !== fingerprint) {
    throw new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request (method, path or body); use a new key.");
  }
  if (rec.status === null || rec.response_body === null) {
    throw new AppError("idempotency_in_progress", "A request with this Idempotency-Key is being executed; retry shortly.", { retryAfter: 1 });
  }
  if (rec.replay_from_service) return { kind: "forward" };
  return { kind: "replay", status: rec.status, body: rec.response_body, headers: rec.response_headers ?? {} };
}

const REFUSALS: Record<string, string> = { idempotency_key_reused: "conflict", idempotency_in_progress: "in_progress" };

export function countIdempotencyRefusal(code: string): void {
  const outcome = REFUSALS[code];
  if (outcome) idempotencyOutcomes.inc({ outcome });
}

export interface IdempotencyOptions {
  repo: GatewayRepo;
  charger: Pick<Charger, "charge" | "current">;
  /** The service answers a second execution from its own record, so the claim only has to outlive this replica's own wait. */
  leaseMs: number;
}

const JSON_TYPE = "application/json; charset=utf-8";
const PROBLEM_TYPE = "application/problem+json; charset=utf-8";

/** Claims or outcomes of one event-loop turn written in one statement at most. */
const MAX_BATCH = 32;
/** A larger answer is stored in a statement of its own, so that one statement's parameters stay small. */
const MAX_BATCHED_BODY_CHARS = 16_384;

export function idempotencyHooks(opts: IdempotencyOptions) {
  // Requests parsed in one turn of the event loop (a busy replica reads many sockets at a time)
  // claim their keys, and later store their outcomes, in one statement each instead of one per
  // request: the same rows, fewer round trips and fewer wakeups of the database's processes.
  const claimKey = turnBatches<Claimed, boolean>(MAX_BATCH, (claims) => opts.repo.claimIdempotencyKeys(claims, opts.leaseMs));
  const storeBatched = turnBatches<Outcome, void>(MAX_BATCH, async (outcomes) => {
    await opts.repo.storeIdempotentOutcomes(outcomes);
    return outcomes.map(() => undefined);
  });
  const store = (o: Outcome): Promise<void> => (o.body.length > MAX_BATCHED_BODY_CHARS ? opts.repo.storeIdempotentOutcomes([o]) : storeBatched(o));

  const claim = (replayFromService: boolean) =>
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
      const claimed = await claimIdempotency(opts.repo, claimKey, state.identity.credential_id, key, fingerprint);
      if (claimed.kind === "replay") {
        idempotencyOutcomes.inc({ outcome: "replayed" });
        // Uncharged, yet with the rate-limit headers the operation's answers carry.
        const counters = rateLimitHeaders(await opts.charger.current(state.identity));
        return reply.code(claimed.status).headers(claimed.headers).headers(counters).header("idempotency-replayed", "true").send(claimed.body);
      }
      if (claimed.kind === "forward") {
        // Scope and entitlement are still checked: a secret goes only to a credential that may see it now.
        state.forwarded = true;
        idempotencyOutcomes.inc({ outcome: "replayed" });
        reply.header("idempotency-replayed", "true");
        return undefined;
      }
      state.held = { credentialId: claimed.credentialId, key: claimed.key, replayFromService };
      idempotencyOutcomes.inc({ outcome: "first" });
      return undefined;
    };

  async function noteFailure(req: FastifyRequest, _reply: FastifyReply, error: unknown): Promise<void> {
    if (req.pipeline) req.pipeline.failure = error;
  }

  // Stored before the response leaves, so a retry that follows the response always finds it.
  async function storeOutcome(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const state = req.pipeline;
    const held = state?.held;
    if (!state || !held) return payload;
    // Once per request: if storing fails, the error's own response passes here again.
    state.held = undefined;
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
        await store({ credentialId: held.credentialId, key: held.key, status: reply.statusCode, body, headers, replayFromService: held.replayFromService });
      } else if (isAppError(failure) && failure.status < 500 && failure.status !== 429) {
        const problem = JSON.stringify(toProblem(failure, String(req.id), req.server.publicBaseUrl));
        const headers = { "content-type": PROBLEM_TYPE, ...(failure.etag === undefined ? {} : { etag: failure.etag }) };
        await store({ credentialId: held.credentialId, key: held.key, status: failure.status, body: problem, headers });
      } else {
        // A refusal before execution (429) or an unknown outcome (5xx) gives the key back: the
        // retry runs again and the service's own idempotency record prevents a twin.
        await opts.repo.releaseIdempotencyKey(held.credentialId, held.key).catch((err: unknown) => req.log.error({ err }, "could not release idempotency key"));
      }
    } catch (e) {
      await opts.repo.releaseIdempotencyKey(held.credentialId, held.key).catch((err: unknown) => req.log.error({ err }, "could not release idempotency key"));
      // Rendered here: an error thrown from onSend would reach fastify's fallback handler (its own JSON,
      // the old status). A database that is down is a 503 to retry: the service's own record answers it.
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

  return { claim, noteFailure, storeOutcome };
}
