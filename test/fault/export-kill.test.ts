import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { api, eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareLoadTenants } from "./load.js";
import { seconds, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * The tasks service killed with SIGKILL in the middle of an export of tens of thousands of tasks,
 * then started again. The export's message comes back once its ack wait passes, the row's lapsed
 * lease lets the new process take it over, and it runs again from a new snapshot: it must succeed
 * once, with every task exactly once in the file, and leave no temporary file behind.
 */
const TASKS = Number(process.env["FAULT_EXPORT_TASKS"] ?? 60_000);
let stack: ProcessStack;
let sql: postgres.Sql;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "export-kill-"));
  stack = await startProcessStack({
    replicas: { gateway: 1, tasks: 1, keys: 1, boards: 1, notifications: 1 },
    // A short lease, so the replacement takes over seconds after the kill, not half a minute.
    serviceEnv: { tasks: { EXPORT_LEASE: "5s", EXPORT_TMP_DIR: dir } },
  });
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The organization's tasks and one version each, set-based: what thousands of creates would have written. */
async function seed(org: string, owner: string, n: number): Promise<void> {
  await sql`
    insert into tasks.tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, description, status, notes, created_at, updated_at)
    select ${org}, g, ${owner}, 'ver_kill_' || g, 1, 'Task ' || g || ', with "quotes"', 'A description of task ' || g,
      (array['TODO', 'IN_PROGRESS', 'COMPLETED'])[1 + g % 3], repeat('notes ', 40), now(), now()
    from generate_series(1, ${n}) g`;
  await sql`
    insert into tasks.task_versions (id, organization_id, task_number, seq, title, description, status, notes, project_ids, created_at)
    select current_version_id, organization_id, number, 1, title, description, status, notes, '{}', updated_at
    from tasks.tasks where organization_id = ${org}`;
  await sql`insert into tasks.org_counters (organization_id, last_number) values (${org}, ${n})`;
}

describe("the tasks service killed during an export", () => {
  it("when its only replica gets SIGKILL mid-export and starts again, then the export completes once with every task exactly once", async () => {
    const url = stack.gatewayUrls[0] as string;
    const gw = api(url);
    const [owner] = await prepareLoadTenants(stack, 1);
    if (!owner) throw new Error("no tenant");
    await seed(owner.organizationId, owner.userId, TASKS);
    const as = { token: owner.apiKey };
    // Killed once the run has written part of the tasks, so the kill lands inside the snapshot's work.
    // Progress is recorded once a second: a run that finishes before its first record was never seen
    // part done, so another export is started (at most three, each with the organization's place).
    let id = "";
    let midway: { done: number; total: number } | undefined;
    for (let attempt = 1; attempt <= 3 && midway === undefined; attempt++) {
      const started = await gw.post("/v1/exports", { format: "jsonl", include: ["tasks", "history"] }, as);
      expect(started.status, started.text).toBe(202);
      id = started.body.id as string;
      const seen = await eventually(
        async () => {
          const r = await gw.get(`/v1/exports/${id}`, as);
          const p = r.body.progress as { done: number; total: number };
          if (r.body.status === "running" && p.done > 0 && p.done < p.total) return { midway: p };
          if (r.body.status === "succeeded") return { midway: undefined };
          throw new Error(`the export is ${String(r.body.status)} at ${p.done}/${p.total}`);
        },
        { timeoutMs: 60_000, intervalMs: 20, what: "the export to be part done" },
      );
      midway = seen.midway;
    }
    if (midway === undefined) throw new Error("three exports in a row finished before any was seen part done");
    const killedAt = Date.now();
    await stack.kill("tasks", 0, "SIGKILL");
    const leftBehind = (await readdir(dir)).filter((name) => name.includes(id));
    expect(leftBehind.length, "the killed run's temporary files").toBeGreaterThan(0);
    stack.restart("tasks", 0);

    const done = await eventually(
      async () => {
        const r = await gw.get(`/v1/exports/${id}`, as);
        if (r.status !== 200) return false;
        expect(r.body.status, r.text).not.toBe("failed");
        return r.body.status === "succeeded" ? r.body : false;
      },
      { timeoutMs: 150_000, intervalMs: 250, what: "the export to succeed after the restart" },
    );
    const recovered = Date.now() - killedAt;
    expect(done.progress).toEqual({ done: TASKS, total: TASKS });

    const link = new URL(done.download_url as string);
    const file = await fetch(new URL(link.pathname, url));
    expect(file.status).toBe(200);
    const text = await file.text();
    const counts = new Map<string, number>();
    const tasks = new Set<unknown>();
    let duplicates = 0;
    for (const line of text.trimEnd().split("\n")) {
      const o = JSON.parse(line) as { object: string; id?: string };
      counts.set(o.object, (counts.get(o.object) ?? 0) + 1);
      if (o.object !== "task") continue;
      if (tasks.has(o.id)) duplicates++;
      tasks.add(o.id);
    }
    expect({ duplicates, tasks: tasks.size, versions: counts.get("task_version"), members: counts.get("member") }).toEqual({
      duplicates: 0,
      tasks: TASKS,
      versions: TASKS,
      members: 1,
    });
    const rows = await sql`select status, attempts from tasks.exports where organization_id = ${owner.organizationId}`;
    expect(rows.map((r) => r["status"])).toEqual(["succeeded"]);
    expect(Number(rows[0]?.["attempts"])).toBeGreaterThanOrEqual(2);
    // The new process removed the dead one's files at start, and its own after sending the file.
    expect((await readdir(dir)).filter((name) => name.includes(id))).toEqual([]);
    console.log(
      `export kill -9: ${TASKS} tasks, killed at ${midway.done}/${midway.total}, ${rows[0]?.["attempts"]} runs, succeeded ${seconds(recovered)} after the kill; ${(text.length / 1e6).toFixed(1)} MB, every task once`,
    );
    expect(stack.unexpectedExits).toEqual([]);
  });
});
