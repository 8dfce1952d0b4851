import { RawJson, type Page } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import type postgres from "postgres";
import type { Sql } from "./pool.js";

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

/**
 * A keyset position's time as text, to the microsecond the column holds (milliseconds would make
 * rows of one millisecond skip or repeat across pages): `to_char(<column> at time zone 'UTC',
 * KEYSET_TIME)` in the select list, read back by a "timestamp" column of keysetAfter().
 */
export const KEYSET_TIME = `'YYYY-MM-DD"T"HH24:MI:SS.US'`;

/**
 * How a cursor value is compared with its column, as the page's last row wrote it:
 * - "timestamp": text in KEYSET_TIME, read back as that UTC time (`::text::timestamp at time zone 'UTC'`);
 * - "text": as is;
 * - "bigint": sent as text and cast (`::bigint`), as a bigint column's key is selected as text;
 * - "integer": sent as a number, no cast (an int column: a version's seq, an attempt number).
 */
export type KeysetType = "timestamp" | "text" | "bigint" | "integer";

const READ_BACK: Record<KeysetType, string> = {
  timestamp: "::text::timestamp at time zone 'UTC'",
  text: "",
  bigint: "::bigint",
  integer: "",
};

/** One list's ORDER BY, made by keyset(): what keysetAfter() writes for it. */
export interface Keyset {
  readonly types: readonly KeysetType[];
  /** The predicate's text around its values, one template made once (see keyset()). */
  readonly strings: TemplateStringsArray;
}

const COLUMN = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/**
 * A list's keyset: its ORDER BY columns in order, each with how its cursor value is read back, all
 * in one direction. Made once per list (a module constant): postgres.js keeps, per template
 * strings array, the stack where it was first used, so the template keysetAfter() sends must be
 * the same array every time, as a template literal's is.
 */
export function keyset(direction: "asc" | "desc", ...columns: ReadonlyArray<readonly [column: string, type: KeysetType]>): Keyset {
  const first = columns[0];
  if (first === undefined) throw new Error("a keyset needs at least one column");
  for (const [c] of columns) if (!COLUMN.test(c)) throw new Error(`not a column name: ${c}`);
  const names = columns.map(([c]) => c).join(", ");
  const op = direction === "desc" ? "<" : ">";
  const types = columns.map(([, t]) => t);
  // One column: `and seq < $1`; more: `and (created_at, id) < ($1::…, $2)`, a row comparison.
  // The text between the values: each value's read-back, then a comma or the closing parenthesis.
  const row = columns.length > 1;
  const parts = [row ? `and (${names}) ${op} (` : `and ${names} ${op} `];
  for (const [i, t] of types.entries()) parts.push(READ_BACK[t] + (i < types.length - 1 ? ", " : row ? ")" : ""));
  return { types, strings: Object.freeze(Object.assign(parts, { raw: Object.freeze([...parts]) })) };
}

/**
 * The predicate that starts a page after the cursor `after` (none without one): `and (<columns>)
 * < (<values>)` for a descending list, `>` for an ascending one, each value read back as its
 * column's type. The text is the one a template literal of the same SQL gives, so the statement
 * and its plan are those of the hand-written predicate. Throws the validation error of
 * decodeKeyset() for a cursor that is not one of this list's.
 */
export function keysetAfter(sql: Sql, after: string | undefined, key: Keyset): postgres.PendingQuery<postgres.Row[]> {
  if (!after) return sql``;
  const values = decodeKeyset(after, key.types.length);
  return sql(key.strings, ...values.map((v, i) => (key.types[i] === "integer" ? Number(v) : String(v))));
}
