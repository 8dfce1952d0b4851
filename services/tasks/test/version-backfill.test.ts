import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createDb, migrate } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, describe, expect, inject, it } from "vitest";
import { TASK_BACKFILLS } from "../src/repo/backfills.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// A task's version on a schema holding tasks from before it was filled: tasks never changed since
// (null), and one changed since (kept). After the service's migrations every row has one, in
// batches across many pages, the columns are not null, and a row written without one (by a replica
// of the previous release) starts at 1.
const stack = inject("stack");
const SCHEMA = `tasks_version_${randomUUID().slice(0, 8)}`;
const log = createLogger({ service: "version-backfill-test", level: "silent" });
const before = mkdtempSync(join(tmpdir(), "tasks-0017-"));
for (const name of readdirSync(MIGRATIONS_DIR)) if (name < "0018") copyFileSync(join(MIGRATIONS_DIR, name), join(before, name));
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2 });
const sql = db.sql;
const ORG = "org_version_backfill";
/** Over a thousand pages of tasks (a kilobyte of description each): several batches. */
const TASKS = 8000;

afterAll(async () => {
  await sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
  rmSync(before, { recursive: true, force: true });
});

const nulls = async (table: string) => Number((await sql.unsafe(`select count(*)::int as n from ${table} where version is null`))[0]?.["n"]);

describe("a task's version, filled for the tasks from before it", () => {
  it("when the service migrates tasks without one, then each gets its count of versions, one it had stays, and the column is not null with a default of 1", async () => {
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: before, log });
    await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, description, status, created_at, updated_at)
      select ${ORG}, n, 'usr_v', 'ver_' || n, 1 + n % 3, 'old ' || n, repeat('x', 1000), 'TODO', now(), now() from generate_series(1, ${TASKS}) n`;
    await sql`insert into task_versions (id, organization_id, task_number, seq, title, status, project_ids, created_at)
      select 'ver_' || n || '_' || s, ${ORG}, n, s, 'old', 'TODO', '{}', now() from generate_series(1, ${TASKS}) n, generate_series(1, 1 + n % 3) s`;
    // Archived after migration 0013 took the count: a version of its own, one above its content versions.
    await sql`update tasks set version = 3, archived = true where organization_id = ${ORG} and number = 2`;
    await sql`update task_versions set version = 3 where organization_id = ${ORG} and task_number = 2 and seq = 3`;
    const [pages] = await sql`select pg_relation_size('tasks') / current_setting('block_size')::int as n`;
    expect(Number(pages?.["n"])).toBeGreaterThan(1000);
    expect(await nulls("tasks")).toBe(TASKS - 1);

    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log, backfills: TASK_BACKFILLS });

    expect(await nulls("tasks")).toBe(0);
    expect(await nulls("task_versions")).toBe(0);
    const wrong = await sql`select number, version, version_count from tasks where version <> version_count and number <> 2`;
    expect(wrong).toEqual([]);
    const wrongVersions = await sql`select task_number, seq, version from task_versions where version <> seq and task_number <> 2`;
    expect(wrongVersions).toEqual([]);
    const [kept] = await sql`select version from tasks where organization_id = ${ORG} and number = 2`;
    expect(kept?.["version"]).toBe(3);
    const columns = await sql`select table_name, is_nullable, column_default from information_schema.columns
      where table_schema = ${SCHEMA} and column_name = 'version' order by table_name`;
    expect(columns.map((c) => [c["table_name"], c["is_nullable"], c["column_default"]])).toEqual([
      ["task_versions", "NO", "1"],
      ["tasks", "NO", "1"],
    ]);

    // A create of the previous release names no version.
    const [created] =
      await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, created_at, updated_at)
      values (${ORG}, ${TASKS + 1}, 'usr_v', 'ver_new', 1, 'new', 'TODO', now(), now()) returning version`;
    expect(created?.["version"]).toBe(1);
    // A replica starting later finds the columns filled and changes nothing.
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log, backfills: TASK_BACKFILLS });
    expect(await nulls("tasks")).toBe(0);
  });
});
