import { randomUUID } from "node:crypto";
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, migrate } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, describe, expect, inject, it } from "vitest";
import { dueDatesSystem } from "../src/domain/due-dates.js";
import { tasksResources } from "../src/domain/resources.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// Migration 0024 on a schema holding tasks from before it: the open tasks already past their due
// date count as announced (an upgrade sends no task.overdue for every task ever left overdue), the
// others owe their events as any task does.
const stack = inject("stack");
const SCHEMA = `tasks_due_events_${randomUUID().slice(0, 8)}`;
const log = createLogger({ service: "due-events-migration-test", level: "silent" });
const before = mkdtempSync(join(tmpdir(), "tasks-0023-"));
for (const name of readdirSync(MIGRATIONS_DIR)) if (name < "0024") copyFileSync(join(MIGRATIONS_DIR, name), join(before, name));
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2 });
const sql = db.sql;
const ORG = "org_due_events_migration";
const HOUR = 3600_000;

afterAll(async () => {
  await sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
  rmSync(before, { recursive: true, force: true });
});

describe("migration 0024: due-date events", () => {
  it("when tasks from before it are migrated, then the open ones already past count as announced, and the rest owe their events", async () => {
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: before, log });
    const now = Date.now();
    const tasks = [
      { number: 1, status: "TODO", due: new Date(now - 48 * HOUR) },
      { number: 2, status: "COMPLETED", due: new Date(now - 48 * HOUR) },
      { number: 3, status: "TODO", due: new Date(now + HOUR) },
      { number: 4, status: "TODO", due: new Date(now + 30 * 24 * HOUR) },
      { number: 5, status: "TODO", due: null },
    ];
    for (const t of tasks) {
      await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, due_date, created_at, updated_at)
        values (${ORG}, ${t.number}, 'usr_due', ${`ver_${t.number}`}, 1, 'old', ${t.status}, ${t.due}, now(), now())`;
    }

    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });

    const due = dueDatesSystem(tasksResources(db, { log }), { windowMs: 24 * HOUR });
    expect(await due.tick(new Date(now))).toEqual({ overdue: 0, soon: 1 });
    const sent = async () =>
      (await sql<{ type: string; id: string }[]>`select type, payload->'data'->>'id' as id from events order by created_at, id`).map(
        (e) => `${e.type} ${e.id}`,
      );
    expect(await sent()).toEqual(["task.due_soon T-3"]);
    // The completed one was not marked: reopened past its date, it is overdue as any task would be.
    await sql`update tasks set status = 'TODO' where organization_id = ${ORG} and number = 2`;
    expect(await due.tick(new Date(now))).toEqual({ overdue: 1, soon: 0 });
    expect(await sent()).toEqual(["task.due_soon T-3", "task.overdue T-2"]);
  });
});
