import { callerOf, type RpcContext, type TaskSummary, taskId } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { boardsService } from "../src/domain/boards-service.js";
import { boardsResources, type TasksPort } from "../src/domain/resources.js";
import { type SummaryCache, summaryBytes, summaryCache } from "../src/domain/summary-cache.js";

const summary = (n: number, title: string, more: Partial<TaskSummary> = {}): TaskSummary => ({
  task_id: taskId(n),
  title,
  status: "TODO",
  archived: false,
  owner_user_id: "usr_board_cache",
  assignee_ids: [],
  parent_task_id: null,
  ...more,
});

describe("the summary cache", () => {
  it("when a lookup started before a change finishes after it, then its copies are not kept", () => {
    const c = summaryCache();
    const epoch = c.epoch();
    c.invalidate("org", [99]); // any change, even of another task, ends the lookup's epoch
    c.put("org", [summary(1, "old")], epoch);
    expect(c.get("org", 1)).toBeUndefined();
    c.put("org", [summary(1, "new")], c.epoch());
    expect(c.get("org", 1)?.title).toBe("new");
  });

  it("when a task changes, then its copy is dropped and another organization's copy of the same number stays", () => {
    const c = summaryCache();
    c.put("a", [summary(1, "a1")], c.epoch());
    c.put("b", [summary(1, "b1")], c.epoch());
    expect([c.get("a", 1)?.title, c.get("b", 1)?.title]).toEqual(["a1", "b1"]);
    c.invalidate("a", [1]);
    expect([c.get("a", 1), c.get("b", 1)?.title]).toEqual([undefined, "b1"]);
    c.clear();
    expect(c.get("b", 1)).toBeUndefined();
  });

  it("when the bytes or entries are full, then the oldest copies go first; when expired, then a copy is not served", () => {
    let clock = 1_000;
    const long = "x".repeat(1_000);
    const c = summaryCache({ maxBytes: 3 * summaryBytes(summary(1, long)), ttlMs: 30, now: () => clock });
    c.put(
      "o",
      [1, 2, 3, 4].map((n) => summary(n, long)),
      c.epoch(),
    );
    expect([1, 2, 3, 4].map((n) => c.get("o", n)?.task_id)).toEqual([undefined, "T-2", "T-3", "T-4"]);
    expect(c.bytes).toBeLessThanOrEqual(3 * summaryBytes(summary(1, long)));
    const found = new Map<number, TaskSummary>();
    expect(c.take("o", [1, 3, 4], found)).toEqual([1]);
    expect([...found.keys()]).toEqual([3, 4]);
    clock += 30;
    expect(c.get("o", 4)).toBeUndefined();
    expect(c.take("o", [3], new Map())).toEqual([3]);
    const few = summaryCache({ maxEntries: 2 });
    few.put("o", [summary(1, "1"), summary(2, "2"), summary(3, "3")], few.epoch());
    expect(few.size).toBe(2);
  });
});

// The boards domain over the stack's `boards` schema, with a tasks service whose change broadcast
// never arrives: what a NATS cluster can do (decision 0017). Where copies are not served, every
// read shows every change at once; the second case shows what serving them there would do.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "boards", max: 2 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

/** The tasks service as the board sees it: current summaries, and a count of lookups. */
function tasksService() {
  const current = new Map<number, TaskSummary>();
  const calls = { lookups: 0 };
  const port: TasksPort = {
    async lookup(_ctx, numbers) {
      calls.lookups++;
      return numbers.flatMap((n) => current.get(n) ?? []);
    },
    async withSubtasks(_ctx, n) {
      return { task: current.get(n) ?? null, subtasks: [] };
    },
  };
  return { current, calls, port };
}

function replica(tasks: TasksPort, servesCopies: boolean, summaries: SummaryCache = summaryCache()) {
  return boardsService(boardsResources(db, tasks, { summaries, servesCopies: () => servesCopies }));
}

function caller() {
  const ctx: RpcContext = {
    request_id: `req_board_cache_${Math.random()}`,
    organization_id: newId("org"),
    user_id: "usr_board_cache",
    credential_id: "key_board_cache",
    scopes: ["tasks:read", "tasks:write"],
    plan: "pro",
  };
  return callerOf(ctx);
}

const DAY = "2026-11-23";
const shown = async (svc: ReturnType<typeof boardsService>, c: ReturnType<typeof caller>) =>
  (await svc.board(c, DAY)).sections.flatMap((s) => s.entries.map((e) => [e.task_id, e.title, e.status]));

describe("board reads when the change broadcast is lost", () => {
  it("when copies are not served (a NATS cluster), then a read after a rename, a completion and an archive shows them at once", async () => {
    const tasks = tasksService();
    const svc = replica(tasks.port, false);
    const c = caller();
    for (const n of [1, 2, 3]) {
      tasks.current.set(n, summary(n, `t${n}`));
      await svc.plan(c, { date: DAY, task_id: taskId(n), section: "TODO" });
    }
    expect(await shown(svc, c)).toEqual([
      ["T-1", "t1", "TODO"],
      ["T-2", "t2", "TODO"],
      ["T-3", "t3", "TODO"],
    ]);
    tasks.current.set(1, summary(1, "t1 renamed"));
    tasks.current.set(2, summary(2, "t2", { status: "COMPLETED" }));
    tasks.current.set(3, summary(3, "t3", { archived: true }));
    expect(await shown(svc, c)).toEqual([
      ["T-1", "t1 renamed", "TODO"],
      ["T-2", "t2", "COMPLETED"],
    ]);
    expect(tasks.calls.lookups).toBe(2);
  });

  it("when copies are served (one NATS server) and the broadcast is lost, then the old title shows: why a cluster serves none", async () => {
    const tasks = tasksService();
    const summaries = summaryCache();
    const svc = replica(tasks.port, true, summaries);
    const c = caller();
    tasks.current.set(1, summary(1, "first"));
    await svc.plan(c, { date: DAY, task_id: "T-1", section: "TODO" });
    expect(await shown(svc, c)).toEqual([["T-1", "first", "TODO"]]);
    tasks.current.set(1, summary(1, "second"));
    expect(await shown(svc, c)).toEqual([["T-1", "first", "TODO"]]);
    expect(tasks.calls.lookups).toBe(1);
    // The broadcast that one server delivers ahead of the next read.
    summaries.invalidate(c.organizationId, [1]);
    expect(await shown(svc, c)).toEqual([["T-1", "second", "TODO"]]);
    expect(tasks.calls.lookups).toBe(2);
  });
});
