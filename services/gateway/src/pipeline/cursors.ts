import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { taskId, taskNumber } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Operation, UnwrapCursor } from "./operation.js";

/** Whose list a cursor pages, besides its query: the caller's organization and the route's path parameters as parsed. */
export interface CursorOwner {
  organization: string;
  params: unknown;
}

/** A cursor whose signature and query binding hold; its position comes out once its owner is checked. */
export interface OpenedCursor {
  position(owner: CursorOwner): string;
}

const NOT_OURS = "is not a cursor issued by this API";
// One answer for every binding that does not hold (query, organization, path, or a cursor from
// before organizations and paths were bound): it does not tell a cursor of another organization
// from one of another filter.
const REBOUND = "was issued for a different query; reuse a cursor only with the same limit and filters";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A path parameter as the service behind the route reads it: a task is named T-24, 24 or T-024
 * alike (every parameter naming a task is called task_id or ends so), so it is bound as T-24;
 * every other id has one spelling. Anything that names no task stays as given (its list is a 404).
 */
function canonicalParam(name: string, value: unknown): unknown {
  if (typeof value !== "string" || !(name === "task_id" || name.endsWith("_task_id"))) return value;
  const n = taskNumber(value);
  return n === null ? value : taskId(n);
}

/**
 * Cursors as clients see them: the service's raw keyset position, bound to the list and its
 * query (every parameter but `after`, defaults applied) and to its owner (the organization of
 * the credential and the route's path parameters), signed with a key shared by every gateway
 * replica. A tampered cursor, or one reused with other parameters, is 400 at /after.
 *
 * The two bindings are checked in two steps: the query's with the signature, before the path is
 * parsed, so a request with several faults keeps the first error it had; the owner's once the
 * path is parsed (its parameters are compared as the route reads them).
 */
export function cursorCodec(secret: string) {
  const sign = (payload: string) => createHmac("sha256", secret).update(payload).digest().subarray(0, 16);
  const queryBinding = (route: string, query: Record<string, unknown>) => {
    const rest = Object.entries(query)
      .filter(([k, v]) => k !== "after" && v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return createHash("sha256").update(route).update(JSON.stringify(rest)).digest("base64url").slice(0, 22);
  };
  // The credential is not bound, only its organization: every key of the organization may read
  // the same list from its first page, so a cursor handed from one key to another gives nothing new.
  const ownerBinding = (owner: CursorOwner) => {
    const params = isRecord(owner.params)
      ? Object.entries(owner.params)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]): [string, unknown] => [k, canonicalParam(k, v)])
          .sort(([a], [b]) => (a < b ? -1 : 1))
      : [];
    return createHash("sha256")
      .update(JSON.stringify([owner.organization, params]))
      .digest("base64url")
      .slice(0, 22);
  };

  return {
    wrap(route: string, query: Record<string, unknown>, owner: CursorOwner, raw: string): string {
      const payload = Buffer.from(JSON.stringify({ r: raw, q: queryBinding(route, query), o: ownerBinding(owner) })).toString("base64url");
      return `${payload}.${sign(payload).toString("base64url")}`;
    },
    /** Checks the signature and the query binding (the cursor step); the owner is checked by `position`. */
    open(route: string, query: Record<string, unknown>, cursor: string): OpenedCursor {
      const [payload, mac, extra] = cursor.split(".");
      const given = Buffer.from(mac ?? "", "base64url");
      const expected = payload ? sign(payload) : undefined;
      if (!payload || extra !== undefined || !expected || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw fieldError("/after", NOT_OURS);
      }
      const parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { r: string; q: string; o?: string };
      if (parsed.q !== queryBinding(route, query)) throw fieldError("/after", REBOUND);
      return {
        position(owner) {
          // A cursor signed before owners were bound has no `o`: it fails like any other, and the
          // client starts again from the first page.
          if (parsed.o !== ownerBinding(owner)) throw fieldError("/after", REBOUND);
          return parsed.r;
        },
      };
    },
  };
}
export type CursorCodec = ReturnType<typeof cursorCodec>;

const NEXT_CURSOR = Buffer.from('"next_cursor":');

/**
 * A page's body with its `next_cursor` replaced by `sign(next_cursor)`, working on the encoded
 * JSON: a relayed page is never parsed (decision 0020). The key is found from the end, where
 * every page writes it after its `data`: inside a JSON string a quote is always escaped, so the
 * bytes `"next_cursor":` can only be a key, and no item of a page has one. A null cursor is left.
 */
export function signNextCursor(body: Buffer, sign: (raw: string) => string): Buffer {
  const at = body.lastIndexOf(NEXT_CURSOR);
  if (at < 0) return body;
  const start = at + NEXT_CURSOR.length;
  if (body[start] !== 0x22) return body;
  // The value's closing quote: the first one not escaped by a backslash.
  let end = start + 1;
  while (end < body.length && body[end] !== 0x22) end += body[end] === 0x5c ? 2 : 1;
  const raw: unknown = JSON.parse(body.toString("utf8", start, end + 1));
  if (typeof raw !== "string") return body;
  return Buffer.concat([body.subarray(0, start), Buffer.from(JSON.stringify(sign(raw))), body.subarray(end + 1)]);
}

/**
 * How a request of the operation turns a signed `after` back into the service's position, for the
 * caller's organization: a cursor is that organization's, so the unwrap closes over it. An
 * operation that is not paginated has none.
 */
export function cursorUnwrap(codec: CursorCodec, op: Pick<Operation, "method" | "url" | "paginated">): (organization: string) => UnwrapCursor {
  const noCursor: UnwrapCursor = () => {
    throw new Error(`${op.method} ${op.url} is not paginated`);
  };
  if (!op.paginated) return () => noCursor;
  return (organization) => (query, after) => {
    const cursor = codec.open(op.url, query, after);
    return (params) => cursor.position({ organization, params });
  };
}

/**
 * The next cursor of a paginated list, signed and bound to the list's query, the caller's
 * organization and the route's path parameters: on the encoded body, which is the service's
 * own bytes when the route relayed them (decision 0020).
 */
export function signCursor(codec: CursorCodec, op: Pick<Operation, "url" | "status">) {
  return function signCursor(req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
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
        signNextCursor(typeof payload === "string" ? Buffer.from(payload) : payload, (raw) => codec.wrap(op.url, query, owner, raw)),
      );
    } catch (e) {
      done(e instanceof Error ? e : new Error(String(e)));
    }
  };
}
