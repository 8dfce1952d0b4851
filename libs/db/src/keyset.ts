import { RawJson, type Page } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";

/**
 * Keyset position of the last row of a page: the ORDER BY values, as an opaque base64url string.
 * The gateway wraps it into a signed cursor bound to the query; services only see this raw form.
 */
export function encodeKeyset(values: ReadonlyArray<string | number>): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

export function decodeKeyset(after: string, arity: number): Array<string | number> {
  try {
    const v: unknown = JSON.parse(Buffer.from(after, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.length === arity && v.every((x) => typeof x === "string" || typeof x === "number")) return v;
  } catch {
    // fall through to the validation error
  }
  throw fieldError("/after", "is not a cursor returned by this list");
}

/** Fetch `limit + 1` rows, then call this: it trims the extra row and says whether there is more. */
export function pageOf<Row, Out>(rows: Row[], limit: number, toItem: (r: Row) => Out, keyOf: (r: Row) => Array<string | number>) {
  const hasMore = rows.length > limit;
  const kept = hasMore ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return {
    data: kept.map(toItem),
    has_more: hasMore,
    next_cursor: hasMore && last !== undefined ? encodeKeyset(keyOf(last)) : null,
  };
}

/**
 * pageOf() for rows that carry their item already encoded as JSON text (`json`, built by
 * Postgres): the page's bytes, assembled without parsing or stringifying any item (decision 0020).
 * `next_cursor` is written last, where the gateway signs it in place.
 */
export function rawPageOf<T, Row extends { json: string }>(rows: Row[], limit: number, keyOf: (r: Row) => Array<string | number>): RawJson<Page<T>> {
  const hasMore = rows.length > limit;
  const kept = hasMore ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  const cursor = hasMore && last !== undefined ? JSON.stringify(encodeKeyset(keyOf(last))) : "null";
  let data = "";
  for (const r of kept) data += data === "" ? r.json : `,${r.json}`;
  return new RawJson(Buffer.from(`{"data":[${data}],"has_more":${hasMore},"next_cursor":${cursor}}`));
}
