import type postgres from "postgres";

/** The schemas whose rows an erased task must leave nothing in (their services own them). */
export const ERASED_SCHEMAS = ["tasks", "boards", "notifications"] as const;

/** Columns that hold a task's number in the tasks and boards schemas. */
const NUMBER_COLUMNS = ["number", "task_number", "blocked_number", "blocker_number", "head_number", "parent_number", "trash_root", "series_head"];
/** Columns that hold a task's id (T-<n>). */
const ID_COLUMNS = ["task_id"];

export interface Leftover {
  table: string;
  row: Record<string, unknown>;
}

/**
 * Every row of every table in the schemas (read from information_schema, so a table added later is
 * searched too) that still names the task: its organization with its number in a number column or
 * its id anywhere in the row's text, or the marker text anywhere at all. What the feed is meant to
 * keep is not a leftover: an event reduced to `{ id }` (`{ id, task_id }` for a comment's) without
 * `changes`, a stream position (ids only), and the notifications service's record of the erasure.
 */
export async function leftovers(db: postgres.Sql, org: string, number: number, marker: string): Promise<Leftover[]> {
  const id = `T-${number}`;
  const tables = await db<{ schema: string; table: string }[]>`
    select table_schema as schema, table_name as table from information_schema.tables
    where table_schema = any(${[...ERASED_SCHEMAS]}::text[]) and table_type = 'BASE TABLE' order by 1, 2`;
  const found: Leftover[] = [];
  for (const { schema, table } of tables) {
    const columns = await db<{ column_name: string; data_type: string }[]>`
      select column_name, data_type from information_schema.columns where table_schema = ${schema} and table_name = ${table}`;
    const names = new Set(columns.map((c) => c.column_name));
    const t = db(`${schema}.${table}`);
    const text = db.unsafe(`row_to_json(x)::text`);
    const conditions = [db`${text} like ${`%${marker}%`}`];
    if (names.has("organization_id")) {
      const byNumber = columns.filter((c) => NUMBER_COLUMNS.includes(c.column_name) && c.data_type === "bigint");
      const byId = columns.filter((c) => ID_COLUMNS.includes(c.column_name));
      for (const c of byNumber) conditions.push(db`(x.organization_id = ${org} and ${db(c.column_name)} = ${number})`);
      for (const c of byId) conditions.push(db`(x.organization_id = ${org} and ${db(c.column_name)}::text = ${id})`);
      conditions.push(db`(x.organization_id = ${org} and ${text} like ${`%"${id}"%`})`);
    }
    let where = conditions[0] as postgres.PendingQuery<postgres.Row[]>;
    for (const c of conditions.slice(1)) where = db`${where} or ${c}`;
    const rows = await db<Record<string, unknown>[]>`select row_to_json(x) as row from ${t} x where ${where}`;
    for (const r of rows) {
      const row = r["row"] as Record<string, unknown>;
      if (kept(schema, table, row, id, marker)) continue;
      found.push({ table: `${schema}.${table}`, row });
    }
  }
  return found;
}

function kept(schema: string, table: string, row: Record<string, unknown>, id: string, marker: string): boolean {
  if (JSON.stringify(row).includes(marker)) return false;
  // The notifications service's record that the task was erased (organization, id, time), so that
  // no later event of it makes a notification again; like the feed's `{ id }`, nothing of the task.
  if (schema === "notifications" && table === "erased_tasks") return Object.keys(row).sort().join() === "erased_at,organization_id,task_id";
  if (schema !== "tasks") return false;
  if (table === "event_stream") return true;
  if (table !== "events" && table !== "outbox") return false;
  const payload = row["payload"] as { type?: string; data?: Record<string, unknown>; changes?: unknown } | undefined;
  if (payload === undefined || payload.changes !== undefined) return false;
  const data = JSON.stringify(payload.data);
  return (
    data === JSON.stringify({ id }) ||
    (payload.type?.startsWith("comment.") === true && Object.keys(payload.data ?? {}).length === 2 && payload.data?.["task_id"] === id)
  );
}
