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

/**
 * The bytes of items a page carries when its service passed no budget (tests, tools): NATS's
 * default max_payload (1 MiB) less the room pageBudget() of libs/nats leaves for the reply's
 * wrapping. Services pass pageBudget(nc), read from their connection.
 */
export const DEFAULT_PAGE_BYTES = 1024 * 1024 - 64 * 1024;

/**
 * A page cut at a byte budget by Postgres (DESIGN 20, Size). `page` is the list's statement: its
 * rows in the list's order, at most limit + 1; `bytes` is each row's size as its item will be
 * encoded, an expression over the row `item`; `order` the list's ORDER BY over the row's columns
 * (`item.seq desc`). The rows come back in that order, each with `fits`: true while the items up
 * to it stay within `budget`, and always for the first (a page is never empty, and one item
 * always fits a message). A row comes only when the one before it fits, so the first that does
 * not fit is the last sent, and tells the caller that more follow: Postgres sends at most the
 * budget and one item, whatever the limit. The list's own statement runs as it is, its plan
 * unchanged (its ORDER BY and LIMIT included); only its rows are summed, by a window above it.
 *
 * `columns`: what each row answers, as expressions over `page_cut` (default: all the page's
 * columns). An item's costly parts belong here, not in `page`, with `bytes` read from something
 * cheap (a size stored with the row): then they are computed only for the rows sent, not for
 * every row the limit reads (a page of 500 events of 600 kB each would otherwise unpack them all
 * to send one).
 */
export function withinBudget(sql: Sql, page: postgres.PendingQuery<postgres.Row[]>, bytes: string, order: string, budget: number, columns = "page_cut.*") {
  const size = sql.unsafe(bytes);
  return sql`
    select ${sql.unsafe(columns === "page_cut.*" ? columns : `${columns}, page_cut.page_row`)}, (page_cut.page_row = 1 or page_cut.page_bytes <= ${budget}) as fits from (
      select item.*, ${size} as item_bytes, sum(${size}) over w as page_bytes, row_number() over w as page_row
      from (${page}) item
      window w as (order by ${sql.unsafe(order)} rows between unbounded preceding and current row)) page_cut
    where page_cut.page_row <= 2 or page_cut.page_bytes - page_cut.item_bytes <= ${budget}
    order by page_cut.page_row`;
}

/** What withinBudget() adds to each row. */
export interface Budgeted {
  fits: boolean;
}

/**
 * The rows of a page that are its items: at most `limit`, and, for rows of withinBudget(), none
 * from the first that does not fit. More follow when any row is left over.
 */
export function pageRows<Row>(rows: Row[], limit: number): { kept: Row[]; hasMore: boolean } {
  let n = 0;
  while (n < rows.length && n < limit && (rows[n] as Partial<Budgeted>).fits !== false) n++;
  return { kept: n === rows.length ? rows : rows.slice(0, n), hasMore: rows.length > n };
}

/**
 * Fetch `limit + 1` rows (through withinBudget() for a list whose items can be large), then call
 * this: it trims the rows that are not items and says whether there is more.
 */
export function pageOf<Row, Out>(rows: Row[], limit: number, toItem: (r: Row) => Out, keyOf: (r: Row) => Array<string | number>) {
  const { kept, hasMore } = pageRows(rows, limit);
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
  const { kept, hasMore } = pageRows(rows, limit);
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
