import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { taskId, taskNumber } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Operation, UnwrapCursor } from "./operation.js";

export interface CursorOwner {
  organization: string;
  params: unknown;
}

export interface OpenedCursor {
  position(owner: CursorOwner): string;
}

const NOT_OURS = "is not a cursor issued by this API";
// One answer for every binding that does not hold: it does not tell a cursor of another
// organization from one of another filter.
const REBOUND = "was issued for a different query; reuse a cursor only with the same limit and filters";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Bound as the service reads it: a task is T-24, 24 or T-024 alike, so it is bound as T-24. */
function canonicalParam(name: string, value: unknown): unknown {
  if (typeof value !== "string" || !(name === "task_id" || name.endsWith("_task_id"))) return value;
  const n = taskNumber(value);
  return n === null ? value : taskId(n);
}

/** Bindings remembered per replica; the map is emptied when full, so it is bounded whatever the queries. */
const REMEMBERED_BINDINGS = 1024;
/** Keys longer than this are hashed every time rather than kept (a query of long filters). */
const REMEMBERED_KEY_CHARS = 512;

function hashedOnce(): (key: string, hash: () => string) => string {
  const known = new Map<string, string>();
  return (key, hash) => {
    const found = known.get(key);
    if (found !== undefined) return found;
    const value = hash();
    if (key.length <= REMEMBERED_KEY_CHARS) {
      if (known.size >= REMEMBERED_BINDINGS) known.clear();
      known.set(key, value);
    }
    return value;
  };
}

/**
 * The query's binding is checked with the signature, before the path is parsed, so a request with
 * several faults keeps the first error it had; the owner's once the path is parsed.
 */
export function cursorCodec(secret: string) {
  const sign = (payload: string) => createHmac("sha256", secret).update(payload).digest().subarray(0, 16);
  // Pages of one list repeat the same query and owner: their bindings are hashed once.
  const queries = hashedOnce();
  const owners = hashedOnce();
  const queryBinding = (route: string, query: Record<string, unknown>) => {
    const rest = Object.entries(query)
      .filter(([k, v]) => k !== "after" && v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const text = JSON.stringify(rest);
    return queries(`${route}\u0000${text}`, () => createHash("sha256").update(route).update(text).digest("base64url").slice(0, 22));
  };
  // Only the organization is bound, not the credential: every key of it may read the same list
  // from its first page, so a cursor handed from one key to another gives nothing new.
  const ownerBinding = (owner: CursorOwner) => {
    const params = isRecord(owner.params)
      ? Object.entries(owner.params)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]): [string, unknown] => [k, canonicalParam(k, v)])
          .sort(([a], [b]) => (a < b ? -1 : 1))
      : [];
    const text = JSON.stringify([owner.organization, params]);
    return owners(text, () => createHash("sha256").update(text).digest("base64url").slice(0, 22));
  };

  return {
    wrap(route: string, query: Record<string, unknown>, owner: CursorOwner, raw: string): string {
      const payload = Buffer.from(JSON.stringify({ r: raw, q: queryBinding(route, query), o: ownerBinding(owner) })).toString("base64url");
      return `${payload}.${sign(payload).toString("base64url")}`;
    },
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
          // A cursor signed before owners were bound has no `o`: it fails like any other.
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
 * On the encoded JSON: a relayed page is never parsed (decision 0020). Inside a JSON string a
 * quote is always escaped, so the bytes `"next_cursor":` can only be a key, and no item has one.
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

/** A cursor is that organization's, so the unwrap closes over it. */
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

/** On the encoded body, which is the service's own bytes when the route relayed them (decision 0020). */
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
