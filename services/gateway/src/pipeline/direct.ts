import { type Identity, RawJson } from "@tasksvc/contracts";
import { isAppError, toProblem } from "@tasksvc/errors";
import type { FastifyBaseLogger } from "fastify";
import type { Clients } from "../clients.js";
import { countRefusal, problemOf } from "../http/problems.js";
import { type CursorCodec, cursorUnwrap, signNextCursor } from "./cursors.js";
import { admission, type PipelineOptions } from "./hooks.js";
import { EventStreamAnswer, type RawInput, type ServedOperation, WithStatus } from "./operation.js";

/** A call made in this process for a request already authenticated (an MCP tool call's): who, from where, and the input. */
export interface DirectCall {
  identity: Identity;
  requestId: string;
  origin: { ip?: string; user_agent?: string };
  publicBaseUrl: string;
  log: FastifyBaseLogger;
  raw: RawInput;
}

/** What the HTTP request would have answered: its status, its body, and the wait a 429 names. */
export interface DirectAnswer {
  statusCode: number;
  body: string;
  headers: { "retry-after"?: string };
}

/**
 * Whether an operation may run without an HTTP request of its own: one that changes nothing, so
 * its pipeline is charge, scope and entitlement, input, the call and the cursor, and no
 * Idempotency-Key record, precondition or stream is involved.
 */
export function runsDirectly(op: ServedOperation, readOnly: boolean): boolean {
  return readOnly && !op.idempotent && op.kind === "json" && !op.eventStream && op.preconditions !== "if-match";
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const text = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");

/**
 * The pipeline's steps for such an operation, in the order and with the functions its HTTP route
 * runs them (admission, the operation's own input parsing, its call, the next cursor's signature,
 * a 429's refund, the problem), without building an HTTP request and its reply around them.
 */
export function directRunner(opts: Pick<PipelineOptions, "charger"> & { cursors: CursorCodec; clients: Clients }) {
  const unwraps = new WeakMap<ServedOperation, ReturnType<typeof cursorUnwrap>>();
  const unwrapOf = (op: ServedOperation) => {
    let u = unwraps.get(op);
    if (u === undefined) unwraps.set(op, (u = cursorUnwrap(opts.cursors, op)));
    return u;
  };

  return async function run(op: ServedOperation, call: DirectCall): Promise<DirectAnswer> {
    const { identity } = call;
    let charge: Awaited<ReturnType<typeof admission>>["admitted"]["charge"] = null;
    try {
      const { admitted } = await admission(opts, op, {
        identity,
        requestId: call.requestId,
        origin: call.origin,
        headers: {},
        key: undefined,
        forwarded: false,
        publicBaseUrl: call.publicBaseUrl,
      });
      charge = admitted.charge;
      const prepared = op.prepare(call.raw, unwrapOf(op)(identity.organization_id));
      const result = await prepared.run(admitted, opts.clients);
      if (result instanceof EventStreamAnswer) throw new Error(`${op.method} ${op.url} streams; it cannot run directly`);
      let statusCode = op.status;
      let body: string;
      if (result instanceof RawJson) body = text(result.bytes);
      else if (result instanceof WithStatus) {
        statusCode = result.status;
        body = JSON.stringify(result.body);
      } else body = JSON.stringify(result);
      const query = prepared.query;
      if (op.paginated && statusCode === op.status && isRecord(query)) {
        const owner = { organization: identity.organization_id, params: prepared.params };
        body = signNextCursor(Buffer.from(body), (raw) => opts.cursors.wrap(op.url, query, owner, raw)).toString("utf8");
      }
      return { statusCode, body, headers: {} };
    } catch (e) {
      // A request refused with 429 after it was counted costs nothing, as over HTTP.
      if (charge && isAppError(e) && e.status === 429) opts.charger.refund(charge);
      const err = problemOf(e, call.log);
      countRefusal(err);
      return {
        statusCode: err.status,
        body: JSON.stringify(toProblem(err, call.requestId, call.publicBaseUrl)),
        headers: err.retryAfter === undefined ? {} : { "retry-after": String(err.retryAfter) },
      };
    }
  };
}
export type DirectRunner = ReturnType<typeof directRunner>;
