import { RawJson, type Page } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import type postgres from "postgres";
import type { Sql } from "./pool.js";

/** The gateway wraps it into a signed cursor bound to the query; services only see this raw form. */
export function encodeKeyset(values: ReadonlyArray<string | number>): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

export function decodeKeyset(after: string, arity: number): Array<string | number> {
  try {
    const v: unknown = JSON.parse(Buffer.from(after, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.length === arity && v.every((x) => typeof x === "string" || typeof x === "number")) return v;
  } catch {}
  throw fieldError("/after", "is not a cursor returned by this list");
}

/** NATS's default max_payload less the room pageBudget() of libs/nats leaves for the reply's wrapping. */
export const DEFAULT_PAGE_BYTES = 1024 * 1024 - 64 * 1024;

/**
 * A page cut at a byte budget by Postgres: a window over the list's unchanged statement sums each row's `bytes`, and a row comes only
 * when the one before fits, so at most the budget and one item are sent. Costly parts belong in `columns`, computed only for rows sent.
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

export interface Budgeted {
  fits: boolean;
}

/** At most `limit`, and none from the first row of withinBudget() that does not fit. */
export function pageRows<Row>(rows: Row[], limit: number): { kept: Row[]; hasMore: boolean } {
  let n = 0;
  while (n < rows.length && n < limit && (rows[n] as Partial<Budgeted>).fits !== false) n++;
  return { kept: n === rows.length ? rows : rows.slice(0, n), hasMore: rows.length > n };
}

/** Fetch `limit + 1` rows (through withinBudget() when items can be large), then call this. */
export function pageOf<Row, Out>(rows: Row[], limit: number, toItem: (r: Row) => Out, keyOf: (r: Row) => Array<string | number>) {
  const { kept, hasMore } = pageRows(rows, limit);
  const last = kept[kept.length - 1];
  return {
    data: kept.map(toItem),
    has_more: hasMore,
    next_cursor: hasMore && last !== undefined ? encodeKeyset(keyOf(last)) : null,
  };
}

/** The page's bytes, assembled without parsing any item (decision 0020). `next_cursor` is written last, where the gateway signs it in place. */
export function rawPageOf<T, Row extends { json: string }>(rows: Row[], limit: number, keyOf: (r: Row) => Array<string | number>): RawJson<Page<T>> {
  const { kept, hasMore } = pageRows(rows, limit);
  const last = kept[kept.length - 1];
  const cursor = hasMore && last !== undefined ? JSON.stringify(encodeKeyset(keyOf(last))) : "null";
  let data = "";
  for (const r of kept) data += data === "" ? r.json : `,${r.json}`;
  return new RawJson(Buffer.from(`{"data":[${data}],"has_more":${hasMore},"next_cursor":${cursor}}`));
}

/** To the microsecond the column holds: milliseconds would make rows of one millisecond skip or repeat across pages. */
export const KEYSET_TIME = `'YYYY-MM-DD"T"HH24:MI:SS.US'`;

/** How a cursor value is read back: "bigint" is sent as text and cast, as its key is selected as text. */
export type KeysetType = "timestamp" | "text" | "bigint" | "integer";

const READ_BACK: Record<KeysetType, string> = {
  timestamp: "::text::timestamp at time zone 'UTC'",
  text: "",
  bigint: "::bigint",
  integer: "",
};

export interface Keyset {
  readonly types: readonly KeysetType[];
  readonly strings: TemplateStringsArray;
}

const COLUMN = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/** A module constant: postgres.js keeps state per template strings array, so keysetAfter() must send the same array every time. */
export function keyset(direction: "asc" | "desc", ...columns: ReadonlyArray<readonly [column: string, type: KeysetType]>): Keyset {
  const first = columns[0];
  if (first === undefined) throw new Error("a keyset needs at least one column");
  for (const [c] of columns) if (!COLUMN.test(c)) throw new Error(`not a column name: ${c}`);
  const names = columns.map(([c]) => c).join(", ");
  const op = direction === "desc" ? "<" : ">";
  const types = columns.map(([, t]) => t);
  // One column: `and seq < $1`; more: a row comparison, `and (created_at, id) < ($1::…, $2)`.
  const row = columns.length > 1;
  const parts = [row ? `and (${names}) ${op} (` : `and ${names} ${op} `];
  for (const [i, t] of types.entries()) parts.push(READ_BACK[t] + (i < types.length - 1 ? ", " : row ? ")" : ""));
  return { types, strings: Object.freeze(Object.assign(parts, { raw: Object.freeze([...parts]) })) };
}

/** The same text a template literal of the predicate gives, so the statement and its plan are those of the hand-written one. */
export function keysetAfter(sql: Sql, after: string | undefined, key: Keyset): postgres.PendingQuery<postgres.Row[]> {
  if (!after) return sql``;
  const values = decodeKeyset(after, key.types.length);
  return sql(key.strings, ...values.map((v, i) => (key.types[i] === "integer" ? Number(v) : String(v))));
}
