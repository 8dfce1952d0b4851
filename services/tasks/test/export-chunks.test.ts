import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { tasksInOrder, versionLinesInOrder } from "../src/domain/exports/chunks.js";
import { readAhead } from "../src/domain/exports/read-ahead.js";
import { CHUNK_BYTES, exportReads } from "../src/repo/export-reads.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The export's chunked reads against a schema of its own: every task and version once, in the
// file's order, through windows, continued pages and byte cuts, with the next read started early.
const stack = inject("stack");
const SCHEMA = "tasks_export_chunks_test";
const log = createLogger({ service: "export-chunks-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4, snapshots: 1 });
const sql = db.sql;

/** Tasks 1..TASKS: every tenth a subtask of the one before; task 7 has 1,500 versions, task 600 five of 400 KB notes, task 900 is in the trash. */
const TASKS = 1_200;
const org = newId("org");

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, created_at, updated_at)
    select ${org}, n, 'usr_t', 'ver_' || n, 1, 'task ' || n, 'TODO', now(), now() from generate_series(1, ${TASKS}) n`;
  await sql`update tasks set parent_number = number - 1 where organization_id = ${org} and number % 10 = 0`;
  await sql`update tasks set deleted_at = now(), purge_at = now() + interval '30 days', trash_root = 900 where organization_id = ${org} and number = 900`;
  await sql`insert into task_versions (id, organization_id, task_number, seq, version, title, status, project_ids, notes, created_at)
    select 'ver_' || n || '_' || s, ${org}, n, s, s, 'task ' || n, 'TODO', '{}',
      case when n = 600 then repeat('x', 400 * 1024) end, now()
    from generate_series(1, ${TASKS}) n, generate_series(1, case n when 7 then 1500 when 600 then 5 else 1 end) s`;
});

afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

describe("an export's chunked reads", () => {
  it("when tasks are read for an export, then every task not in the trash comes once, each parent before its subtasks, in chunks of at most 500", async () => {
    const seen: number[] = [];
    const sizes: number[] = [];
    await db.snapshot(async (t) => {
      const reads = exportReads(t);
      for await (const chunk of tasksInOrder(reads, org, (numbers) => reads.taskLines(org, numbers, []))) {
        sizes.push(chunk.length);
        for (const line of chunk) seen.push(Number(JSON.parse(line.json).id.slice(2)));
      }
    });
    const live = Array.from({ length: TASKS }, (_x, i) => i + 1).filter((n) => n !== 900);
    expect([...seen].sort((a, b) => a - b)).toEqual(live);
    const at = new Map(seen.map((n, i) => [n, i]));
    for (const n of live) if (n % 10 === 0) expect(at.get(n)).toBeGreaterThan(at.get(n - 1) ?? Number.POSITIVE_INFINITY);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(500);
  });

  it("when versions are read for an export, then every version of a task not in the trash comes once in task and sequence order, across windows, long histories and large rows", async () => {
    const seen: string[] = [];
    const chunkBytes: number[] = [];
    await db.snapshot(async (t) => {
      for await (const lines of versionLinesInOrder(exportReads(t), org, [])) {
        const items = lines.map((l) => JSON.parse(l.json) as { task_id: string; version: number; notes: string | null });
        chunkBytes.push(items.reduce((a, v) => a + (v.notes?.length ?? 0), 0));
        for (const v of items) seen.push(`${v.task_id.slice(2)}.${v.version}`);
      }
    });
    const expected: string[] = [];
    for (let n = 1; n <= TASKS; n++) {
      if (n === 900) continue;
      const count = n === 7 ? 1_500 : n === 600 ? 5 : 1;
      for (let s = 1; s <= count; s++) expected.push(`${n}.${s}`);
    }
    expect(seen).toEqual(expected);
    // The 400 KB versions came in more than one chunk: two of them at most fit the budget.
    expect(Math.max(...chunkBytes)).toBeLessThanOrEqual(CHUNK_BYTES);
  });
});

describe("reading ahead", () => {
  async function* items(n: number) {
    for (let i = 0; i < n; i++) yield i;
  }

  it("when results are taken, then each read started before the previous result was handed on, and results come in order", async () => {
    const events: string[] = [];
    const out: number[] = [];
    for await (const r of readAhead(items(3), async (i) => {
      events.push(`start ${i}`);
      return i * 10;
    })) {
      events.push(`took ${r / 10}`);
      out.push(r);
    }
    expect(out).toEqual([0, 10, 20]);
    expect(events).toEqual(["start 0", "start 1", "took 0", "start 2", "took 1", "took 2"]);
  });

  it("when a read fails while the one before is being used, then the failure is thrown in its turn and is never an unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const listener = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", listener);
    try {
      const got: number[] = [];
      const run = async () => {
        for await (const r of readAhead(items(3), async (i) => {
          if (i === 1) throw new Error("read 1 failed");
          return i;
        })) {
          got.push(r);
          // The failed read settles while this result is in use.
          await new Promise((res) => setTimeout(res, 20));
        }
      };
      await expect(run()).rejects.toThrow("read 1 failed");
      expect(got).toEqual([0]);
      await new Promise((res) => setTimeout(res, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", listener);
    }
  });
});
