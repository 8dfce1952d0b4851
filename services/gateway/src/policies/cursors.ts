import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { fieldError } from "@tasksvc/errors";

/**
 * Cursors as clients see them: the service's raw keyset position, bound to the list and its
 * query (every parameter but `after`, defaults applied), signed with a key shared by every
 * gateway replica. A tampered cursor, or one reused with other parameters, is 400 at /after.
 */
export function cursorCodec(secret: string) {
  const sign = (payload: string) => createHmac("sha256", secret).update(payload).digest().subarray(0, 16);
  const bindingOf = (route: string, query: Record<string, unknown>) => {
    const rest = Object.entries(query)
      .filter(([k, v]) => k !== "after" && v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return createHash("sha256").update(route).update(JSON.stringify(rest)).digest("base64url").slice(0, 22);
  };

  return {
    wrap(route: string, query: Record<string, unknown>, raw: string): string {
      const payload = Buffer.from(JSON.stringify({ r: raw, q: bindingOf(route, query) })).toString("base64url");
      return `${payload}.${sign(payload).toString("base64url")}`;
    },
    unwrap(route: string, query: Record<string, unknown>, cursor: string): string {
      const [payload, mac, extra] = cursor.split(".");
      const given = Buffer.from(mac ?? "", "base64url");
      const expected = payload ? sign(payload) : undefined;
      if (!payload || extra !== undefined || !expected || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw fieldError("/after", "is not a cursor issued by this API");
      }
      const parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { r: string; q: string };
      if (parsed.q !== bindingOf(route, query)) {
        throw fieldError("/after", "was issued for a different query; reuse a cursor only with the same limit and filters");
      }
      return parsed.r;
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
