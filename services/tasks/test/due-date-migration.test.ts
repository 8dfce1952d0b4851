import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createDb, migrate } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, describe, expect, inject, it } from "vitest";
import { tasksResources } from "../src/domain/resources.js";
import { TASK_INDEXES } from "../src/repo/indexes.js";
import { toTask } from "../src/repo/task-json.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// Migration 0017 on a schema holding tasks from before it: due days stored as `date`, the sort
// indexes of that time built, a recurring head with its wake-up triggers. The days must become
// 00:00 UTC whatever the migrating session's time zone, the indexes come back on the new
// expressions, and the triggers still wake a series when a due date moves.
const stack = inject("stack");
const SCHEMA = `tasks_due_${randomUUID().slice(0, 8)}`;
const log = createLogger({ service: "due-migration-test", level: "silent" });
const before = mkdtempSync(join(tmpdir(), "tasks-0016-"));
for (const name of readdirSync(MIGRATIONS_DIR)) if (name < "0017") copyFileSync(join(MIGRATIONS_DIR, name), join(before, name));
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2 });
const sql = db.sql;
/** The migrating session in a zone far from UTC: a date cast to timestamptz there would move by hours. */
const farFromUtc = `${stack.databaseUrl}${stack.databaseUrl.includes("?") ? "&" : "?"}options=${encodeURIComponent("-c TimeZone=Pacific/Kiritimati")}`;
/** The due date sort indexes as they were built before 0017 (a date sentinel). */
const OLD_INDEXES = [
  { name: "tasks_due_asc_idx", definition: "on tasks (organization_id, archived, (coalesce(due_date, 'infinity'::date)) asc, number asc)" },
  { name: "tasks_due_desc_idx", definition: "on tasks (organization_id, archived, (coalesce(due_date, '-infinity'::date)) desc, number desc)" },
];
const ORG = "org_due_migration";

afterAll(async () => {
  await sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
  rmSync(before, { recursive: true, force: true });
});

describe("migration 0017: due dates become instants", () => {
  it("when tasks with due days are migrated, then each is due at 00:00 UTC that day, the indexes are rebuilt on timestamptz and the wake-up triggers still fire", async () => {
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: before, log, indexes: OLD_INDEXES });
    const recurrence = { frequency: "DAILY", interval: 1, timezone: "UTC", basis: "SCHEDULE", active: true, rollover_enabled: false };
    for (const [number, due] of [
      [1, "2026-03-01"],
      [2, null],
      [3, "9999-12-31"],
    ] as const) {
      await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, due_date, recurrence, created_at, updated_at)
        values (${ORG}, ${number}, 'usr_due', ${`ver_${number}`}, 1, 'old', 'TODO', ${due}::date, ${number === 1 ? sql.json(recurrence) : null}, now(), now())`;
      await sql`insert into task_versions (id, organization_id, task_number, seq, title, status, due_date, project_ids, created_at)
        values (${`ver_${number}`}, ${ORG}, ${number}, 1, 'old', 'TODO', ${due}::date, '{}', now())`;
    }

    await migrate({ url: farFromUtc, schema: SCHEMA, dir: MIGRATIONS_DIR, log, indexes: TASK_INDEXES });

    const shown = async (table: string) =>
      (await sql.unsafe(`select to_char(due_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') as due from ${table} order by 1`)).map((r) => r["due"]);
    expect(await shown("tasks")).toEqual(["2026-03-01T00:00:00", "9999-12-31T00:00:00", null]);
    expect(await shown("task_versions")).toEqual(["2026-03-01T00:00:00", "9999-12-31T00:00:00", null]);
    const types = await sql`select table_name, data_type from information_schema.columns
      where table_schema = ${SCHEMA} and column_name = 'due_date' order by table_name`;
    expect(types.map((r) => [r["table_name"], r["data_type"]])).toEqual([
      ["task_versions", "timestamp with time zone"],
      ["tasks", "timestamp with time zone"],
    ]);

    // Every index of the list is there again and valid, the due date's on a timestamptz sentinel.
    const indexes = await sql`select c.relname as name, i.indisvalid as valid, pg_get_indexdef(i.indexrelid) as def from pg_index i
      join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${SCHEMA}`;
    const byName = new Map(indexes.map((r) => [r["name"] as string, r]));
    for (const ix of TASK_INDEXES) expect(byName.get(ix.name)?.["valid"], ix.name).toBe(true);
    expect(byName.get("tasks_due_asc_idx")?.["def"]).toContain("'infinity'::timestamp with time zone");
    expect(byName.get("tasks_due_desc_idx")?.["def"]).toContain("'-infinity'::timestamp with time zone");

    // The service reads them as the API shows them.
    const repos = tasksResources(db).repos;
    const rows = await repos.tasks.byNumber(ORG, [1, 2, 3]);
    expect(rows.map((r) => toTask(r).due_date).sort()).toEqual(["2026-03-01T00:00:00.000Z", "9999-12-31T00:00:00.000Z", null].sort());

    // Moving a recurring head's due date wakes its series (the trigger made again).
    await sql`update tasks set recurrence_wake = now() where organization_id = ${ORG} and number = 1`;
    await sql`update tasks set due_date = '2026-03-01T09:00:00Z' where organization_id = ${ORG} and number = 1`;
    const [woken] = await sql`select recurrence_wake = '-infinity' as woken from tasks where organization_id = ${ORG} and number = 1`;
    expect(woken?.["woken"]).toBe(true);
  });
});
