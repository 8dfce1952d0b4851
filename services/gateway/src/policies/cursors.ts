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
