import type { Caller, Task } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { type DueDateOptions, dueDatesSystem } from "../src/domain/due-dates.js";
import { OVERDUE_OWED, SOON_OWED } from "../src/repo/due-repo.js";
import { schedulerFixture } from "./scheduler-fixture.js";

// The due-date scheduler against real Postgres, time as an argument of tick(). The schema is this
// file's own, and every tick serves all of it, so each case counts only its own organization's events.
const { db, resources, svc, caller, at } = schedulerFixture("tasks_due_dates_test");
const HOUR = 3600_000;
const scheduler = (o: Partial<DueDateOptions> = {}) => dueDatesSystem(resources, { windowMs: 24 * HOUR, ...o });

interface Sent {
  type: string;
  id: string;
  data: Task & { [k: string]: unknown };
  changes: unknown;
}
/** The organization's due-date events as the feed keeps them, oldest first (one transaction's in task order). */
async function sent(c: Caller): Promise<Sent[]> {
  const rows = await db.sql<{ type: string; payload: { data: Task; changes?: unknown } }[]>`
    select type, payload from events where organization_id = ${c.organizationId} and type in ('task.due_soon', 'task.overdue')
    order by created_at, substr(payload->'data'->>'id', 3)::int`;
  return rows.map((r) => ({ type: r.type, id: r.payload.data.id, data: r.payload.data, changes: r.payload.changes }));
}
const kinds = async (c: Caller) => (await sent(c)).map((e) => `${e.type} ${e.id}`);

describe("due-date events", () => {
  it("when a task's due date comes within the window, then one task.due_soon with the task as read; when it passes, one task.overdue; never again", async () => {
    const c = caller();
    const t = await svc.createTask(c, { title: "file the report", due_date: "2030-03-10T12:00:00Z" });
    const s = scheduler();
    await s.tick(at("2030-03-09T11:59:00Z"));
    expect(await kinds(c)).toEqual([]);
    await s.tick(at("2030-03-09T12:00:00Z"));
    await s.tick(at("2030-03-09T18:00:00Z"));
    expect(await kinds(c)).toEqual([`task.due_soon ${t.id}`]);
    const [soon] = await sent(c);
    expect(soon?.data).toEqual(await svc.getTask(c, t.id));
    expect(soon?.changes).toBeUndefined();
    await s.tick(at("2030-03-10T11:59:59Z"));
    await s.tick(at("2030-03-10T12:00:00Z"));
    await s.tick(at("2030-03-11T12:00:00Z"));
    expect(await kinds(c)).toEqual([`task.due_soon ${t.id}`, `task.overdue ${t.id}`]);
    // Not content: no version, no update time moved.
    expect(await svc.getTask(c, t.id)).toEqual(t);
  });

  it("when a task is created with a due date already past, or moved to one, then the next tick sends task.overdue alone", async () => {
    const c = caller();
    const past = await svc.createTask(c, { title: "late already", due_date: "2030-01-01" });
    const moved = await svc.createTask(c, { title: "moved back", due_date: "2030-06-01" });
    const s = scheduler();
    await s.tick(at("2030-02-01T00:00:00Z"));
    expect(await kinds(c)).toEqual([`task.overdue ${past.id}`]);
    await svc.updateTask(c, moved.id, { due_date: "2030-01-15" });
    await s.tick(at("2030-02-01T00:01:00Z"));
    await s.tick(at("2030-02-01T00:02:00Z"));
    expect(await kinds(c)).toEqual([`task.overdue ${past.id}`, `task.overdue ${moved.id}`]);
    expect((await sent(c))[1]?.data.due_date).toBe("2030-01-15T00:00:00.000Z");
  });

  it("when the due date moves, then both events come again for the new date; when it is cleared, none come", async () => {
    const c = caller();
    const t = await svc.createTask(c, { title: "moving target", due_date: "2030-04-02T00:00:00Z" });
    const cleared = await svc.createTask(c, { title: "no date after all", due_date: "2030-04-02T00:00:00Z" });
    const s = scheduler();
    await s.tick(at("2030-04-01T06:00:00Z"));
    expect(await kinds(c)).toEqual([`task.due_soon ${t.id}`, `task.due_soon ${cleared.id}`]);
    await svc.updateTask(c, t.id, { due_date: "2030-04-03T00:00:00Z" });
    await svc.updateTask(c, cleared.id, { due_date: null });
    await s.tick(at("2030-04-02T06:00:00Z"));
    await s.tick(at("2030-04-03T06:00:00Z"));
    await s.tick(at("2030-04-09T06:00:00Z"));
    expect(await kinds(c)).toEqual([`task.due_soon ${t.id}`, `task.due_soon ${cleared.id}`, `task.due_soon ${t.id}`, `task.overdue ${t.id}`]);
    expect((await sent(c)).map((e) => e.data.due_date)).toEqual([
      "2030-04-02T00:00:00.000Z",
      "2030-04-02T00:00:00.000Z",
      "2030-04-03T00:00:00.000Z",
      "2030-04-03T00:00:00.000Z",
    ]);
  });

  it("when a task is COMPLETED or archived, then it gets no due-date event; reopened while past its date, it gets task.overdue", async () => {
    const c = caller();
    const done = await svc.createTask(c, { title: "done early", status: "COMPLETED", due_date: "2030-05-01" });
    const shelved = await svc.createTask(c, { title: "shelved", due_date: "2030-05-01" });
    await svc.setArchived(c, shelved.id, true);
    const s = scheduler();
    await s.tick(at("2030-04-30T12:00:00Z"));
    await s.tick(at("2030-05-02T12:00:00Z"));
    expect(await kinds(c)).toEqual([]);
    await svc.updateTask(c, done.id, { status: "TODO" });
    await s.tick(at("2030-05-02T12:01:00Z"));
    expect(await kinds(c)).toEqual([`task.overdue ${done.id}`]);
  });

  it("when four schedulers tick at once in small batches, then each task gets each event exactly once", async () => {
    const c = caller();
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await svc.createTask(c, { title: `t${i}`, due_date: `2030-07-01T0${i % 10}:00:00Z` })).id);
    const replicas = Array.from({ length: 4 }, () => scheduler({ batch: 3 }));
    for (const now of ["2030-06-30T12:00:00Z", "2030-07-01T05:00:00Z", "2030-07-02T00:00:00Z"]) {
      await Promise.all(replicas.flatMap((r) => [r.tick(at(now)), r.tick(at(now))]));
    }
    const all = await kinds(c);
    expect(all.filter((k) => k.startsWith("task.due_soon")).sort()).toEqual(ids.map((id) => `task.due_soon ${id}`).sort());
    expect(all.filter((k) => k.startsWith("task.overdue")).sort()).toEqual(ids.map((id) => `task.overdue ${id}`).sort());
    // A scheduler that starts afresh (a restart) finds every event sent.
    expect(await scheduler().tick(at("2030-07-03T00:00:00Z"))).toEqual({ overdue: 0, soon: 0 });
  });

  it("when more tasks are due than a tick's bound, then the tick sends its bound and the next ticks the rest, each once", async () => {
    const c = caller();
    for (let i = 0; i < 12; i++) await svc.createTask(c, { title: `t${i}`, due_date: "2030-08-01" });
    const s = scheduler({ batch: 2, batchesPerTick: 2 });
    expect((await s.tick(at("2030-08-02T00:00:00Z"))).overdue).toBe(4);
    for (let i = 0; i < 3; i++) await s.tick(at("2030-08-02T00:00:00Z"));
    const all = await kinds(c);
    expect(all).toHaveLength(12);
    expect(new Set(all).size).toBe(12);
  });

  it("when a user's write holds the task's row, then the tick leaves it, and the next tick sends its event", async () => {
    const c = caller();
    const t = await svc.createTask(c, { title: "busy", due_date: "2030-09-01" });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const writer = db.tx(async (sql) => {
      await sql`select 1 from tasks where organization_id = ${c.organizationId} and number = ${Number(t.id.slice(2))} for no key update`;
      locked();
      await held;
    });
    await isLocked;
    await scheduler().tick(at("2030-09-02T00:00:00Z"));
    expect(await kinds(c)).toEqual([]);
    release();
    await writer;
    await scheduler().tick(at("2030-09-02T00:00:00Z"));
    expect(await kinds(c)).toEqual([`task.overdue ${t.id}`]);
  });

  it("when the scheduler's conditions are planned, then each is served by its partial index (no scan of the tasks)", async () => {
    const plans = await db.tx(async (sql) => {
      await sql`set local enable_seqscan = off`;
      await sql`set local enable_bitmapscan = off`;
      const overdue = await sql<{ "QUERY PLAN": string }[]>`
        explain select number from tasks where ${sql.unsafe(OVERDUE_OWED)} and due_date <= now() order by due_date limit 500`;
      const soon = await sql<{ "QUERY PLAN": string }[]>`
        explain select number from tasks where ${sql.unsafe(SOON_OWED)} and due_date > now() and due_date <= now() + interval '1 day'
        order by due_date limit 500`;
      return [overdue, soon].map((p) => p.map((r) => r["QUERY PLAN"]).join("\n"));
    });
    expect(plans[0]).toContain("tasks_due_overdue_idx");
    expect(plans[1]).toContain("tasks_due_soon_idx");
  });
});
