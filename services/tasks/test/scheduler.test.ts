import type { Caller, CreateTaskBody, RollOverInput, RpcContext } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RolloverPort, recurrenceScheduler } from "../src/domain/scheduler.js";
import { taskCache } from "../src/domain/task-cache.js";
import { tasksService } from "../src/domain/tasks-service.js";
import { tasksRepo, type TasksRepo } from "../src/repo/tasks-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// Issue 16: the recurrence scheduler against real Postgres, on a schema of its own (the stack's
// tasks service runs its own scheduler on `tasks` with the real clock). Time is an argument of
// tick(): every case says which instant it is, and nothing sleeps.
const stack = inject("stack");
const SCHEMA = "tasks_scheduler_test";
const log = createLogger({ service: "scheduler-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 6 });
const repo = tasksRepo(db.sql);
const deps = { repo, tx: <T>(fn: (r: TasksRepo) => Promise<T>) => db.tx((t) => fn(tasksRepo(t))), written: () => undefined };
const svc = tasksService({ ...deps, cache: taskCache(), checkHits: () => false, changed: async () => undefined });
/**
 * What the scheduler asks of the boards service, kept for the test to read. The boards service's
 * side (once per task and day, an entry the user removed stays removed) runs in the e2e test.
 */
function boardsAsked() {
  const asked: RollOverInput[] = [];
  const port: RolloverPort = {
    rollOver: async (i) => {
      asked.push(i);
      return true;
    },
  };
  return { asked, port, of: (c: Caller) => asked.filter((i) => i.organization_id === c.organizationId) };
}
const scheduler = (boards: RolloverPort = boardsAsked().port) => recurrenceScheduler({ ...deps, boards }, log);

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});
afterAll(async () => {
  await db.sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

function caller(): Caller {
  const org = newId("org");
  const ctx: RpcContext = { request_id: "req_sched", organization_id: org, user_id: "usr_sched", credential_id: "key_sched", scopes: [], plan: "pro" };
  return { organizationId: org, userId: "usr_sched", credentialId: "key_sched", idempotencyKey: undefined, ctx };
}

/** The organization's tasks other than the head, oldest first, as the API shows them. */
async function occurrences(c: Caller, head: string) {
  const page = (await repo.listTasks(c.organizationId, { limit: 100, archived: false })).parse();
  return page.data.filter((t) => t.id !== head).sort((a, b) => Number(a.id.slice(2)) - Number(b.id.slice(2)));
}
const at = (iso: string) => new Date(iso);
/** The due days of a series' occurrences. tick() serves every series in the schema, so tests look at their own. */
const days = async (c: Caller, head: string) => (await occurrences(c, head)).map((t) => t.due_date?.slice(0, 10));

async function series(c: Caller, body: Partial<CreateTaskBody> & { recurrence: NonNullable<CreateTaskBody["recurrence"]> }) {
  return svc.createTask(c, { title: "water the plants", priority: "HIGH", story_points: 2, notes: "the big ones too", ...body });
}

describe("the recurrence scheduler", () => {
  it("when a daily series' next day comes, then one new TODO task like the head is due that day, with its own task.created event; ticking again makes none", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
    const s = scheduler();
    // The head is the series' first occurrence (Nov 1): that day makes nothing.
    await s.tick(at("2026-11-01T12:00:00Z"));
    expect(await days(c, head.id)).toEqual([]);
    await s.tick(at("2026-11-02T08:00:00Z"));
    await s.tick(at("2026-11-02T20:00:00Z"));
    expect(await days(c, head.id)).toEqual(["2026-11-02"]);
    const [made] = await occurrences(c, head.id);
    expect(made).toMatchObject({ title: "water the plants", priority: "HIGH", story_points: 2, notes: "the big ones too", status: "TODO" });
    expect(made?.due_date).toBe("2026-11-02T00:00:00.000Z");
    expect(made?.recurrence).toBeNull();
    expect(made).toMatchObject({ series_task_id: head.id, occurrence_date: "2026-11-02" });
    expect(head).toMatchObject({ series_task_id: null, occurrence_date: null });
    const events = await db.sql<
      { type: string; data: unknown }[]
    >`select type, payload->'data' as data from events where organization_id = ${c.organizationId} and payload->'data'->>'id' = ${made?.id ?? ""}`;
    expect(events.map((e) => e.type)).toEqual(["task.created"]);
    // The event's task (built with the create's statement) is the task as reads show it.
    expect(events[0]?.data).toStrictEqual(await svc.getTask(c, made?.id ?? ""));
  });

  it("when the scheduler was down for weeks, then it makes one occurrence, for the latest day due, not one per missed day", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
    await scheduler().tick(at("2026-11-20T09:00:00Z"));
    expect(await days(c, head.id)).toEqual(["2026-11-20"]);
    await scheduler().tick(at("2026-11-21T09:00:00Z"));
    expect(await days(c, head.id)).toEqual(["2026-11-20", "2026-11-21"]);
  });

  it("when two replicas tick at once, many times over, then each slot still has exactly one occurrence", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "WEEKLY", by_weekday: [1, 4], start_date: "2026-11-02" } });
    for (const now of ["2026-11-05T10:00:00Z", "2026-11-09T10:00:00Z", "2026-11-12T10:00:00Z"]) {
      await Promise.all(Array.from({ length: 4 }, () => scheduler().tick(at(now))));
    }
    expect(await days(c, head.id)).toEqual(["2026-11-05", "2026-11-09", "2026-11-12"]);
    const bySeries = (await repo.listTasks(c.organizationId, { limit: 100, archived: false, series: Number(head.id.slice(2)) })).parse().data;
    expect(bySeries.map((t) => t.occurrence_date).sort()).toEqual(["2026-11-05", "2026-11-09", "2026-11-12"]);
  });

  it("when making an occurrence fails after its task was written, then nothing of it stays, and the next tick makes it once", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
    // A scheduler whose transaction dies after the task's insert, before the slot is recorded.
    const crashing = recurrenceScheduler(
      {
        ...deps,
        boards: boardsAsked().port,
        tx: (fn) =>
          db.tx((t) =>
            fn({
              ...tasksRepo(t),
              recordSlots: async () => {
                throw new Error("killed mid-way");
              },
            }),
          ),
      },
      log,
    );
    await crashing.tick(at("2026-11-02T10:00:00Z"));
    expect(await days(c, head.id)).toEqual([]);
    const counter = await db.sql<{ last_number: string }[]>`select last_number::text from org_counters where organization_id = ${c.organizationId}`;
    expect(counter[0]?.last_number, "the failed occurrence's number is given back").toBe("1");
    await scheduler().tick(at("2026-11-02T10:00:00Z"));
    await scheduler().tick(at("2026-11-02T11:00:00Z"));
    expect(await days(c, head.id)).toEqual(["2026-11-02"]);
  });

  it("when a series has max_occurrences or an end date, then it stops there (the head is the first occurrence)", async () => {
    const c = caller();
    const counted = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01", max_occurrences: 2 } });
    const ended = await series(c, { title: "ends", recurrence: { frequency: "DAILY", start_date: "2026-11-01", end_date: "2026-11-02" } });
    const s = scheduler();
    for (const day of ["02", "03", "04"]) await s.tick(at(`2026-11-${day}T10:00:00Z`));
    const all = await occurrences(c, "none");
    const dueOf = (title: string, head: string) => all.filter((t) => t.title === title && t.id !== head).map((t) => t.due_date?.slice(0, 10));
    expect(dueOf("water the plants", counted.id)).toEqual(["2026-11-02"]);
    expect(dueOf("ends", ended.id)).toEqual(["2026-11-02"]);
  });

  it("when a series is paused, then nothing is made; once resumed, the latest day due is", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01", active: false } });
    await scheduler().tick(at("2026-11-05T10:00:00Z"));
    expect(await days(c, head.id)).toEqual([]);
    await svc.updateTask(c, head.id, { recurrence: { frequency: "DAILY", start_date: "2026-11-01", active: true } });
    await scheduler().tick(at("2026-11-06T10:00:00Z"));
    expect(await days(c, head.id)).toEqual(["2026-11-06"]);
  });

  it("when the basis is completion, then nothing comes until the latest occurrence is completed, and the next is due one interval after", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", interval: 3, basis: "COMPLETION", start_date: "2026-11-01" } });
    const far = new Date(Date.now() + 30 * 86_400_000);
    await scheduler().tick(far);
    expect(await days(c, head.id)).toEqual([]);
    await svc.updateTask(c, head.id, { status: "COMPLETED" });
    const completedOn = new Date().toISOString().slice(0, 10);
    const threeOn = new Date(Date.parse(`${completedOn}T12:00:00Z`) + 3 * 86_400_000);
    await scheduler().tick(new Date(threeOn.getTime() - 86_400_000));
    expect(await days(c, head.id)).toEqual([]);
    await scheduler().tick(threeOn);
    expect(await days(c, head.id)).toEqual([threeOn.toISOString().slice(0, 10)]);
    // That one open, nothing more however long it waits.
    await scheduler().tick(far);
    expect(await days(c, head.id)).toEqual([threeOn.toISOString().slice(0, 10)]);
  });

  it("when the basis is completion and the latest occurrence is archived instead of completed, then the next is due one interval after the day it was archived", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", interval: 2, basis: "COMPLETION", start_date: "2026-11-01" } });
    const bySeries = async () => (await repo.listTasks(c.organizationId, { limit: 100, archived: false, series: Number(head.id.slice(2)) })).parse().data;
    const day = (at: Date) => at.toISOString().slice(0, 10);
    const now = new Date();
    const inDays = (n: number) => new Date(Date.parse(`${day(now)}T12:00:00Z`) + n * 86_400_000);
    // The head was completed four days ago: its next occurrence was due two days ago, and is made now.
    await svc.updateTask(c, head.id, { status: "COMPLETED" });
    await db.sql`update tasks set updated_at = updated_at - interval '4 days' where organization_id = ${c.organizationId} and number = ${Number(head.id.slice(2))}`;
    await scheduler().tick(now);
    const [first] = await bySeries();
    expect(first?.occurrence_date).toBe(day(inDays(-2)));
    // Dismissed today (archived, never completed): the series goes on from today, not stalled.
    await svc.setArchived(c, first?.id ?? "", true);
    await scheduler().tick(inDays(1));
    expect(await bySeries()).toEqual([]);
    await scheduler().tick(inDays(2));
    expect((await bySeries()).map((t) => t.occurrence_date)).toEqual([day(inDays(2))]);
  });

  it("when the basis is completion and an occurrence is completed before its own day (a replica's clock ran ahead), then the next is one interval after that day, not the same slot again", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
    const bySeries = async () => (await repo.listTasks(c.organizationId, { limit: 100, archived: false, series: Number(head.id.slice(2)) })).parse().data;
    const day = (at: Date) => at.toISOString().slice(0, 10);
    const inDays = (n: number) => new Date(Date.parse(`${day(new Date())}T12:00:00Z`) + n * 86_400_000);
    await svc.updateTask(c, head.id, { status: "COMPLETED" });
    // A replica a day ahead makes tomorrow's occurrence now; the user completes it today.
    await scheduler().tick(inDays(1));
    const [early] = await bySeries();
    expect(early?.occurrence_date).toBe(day(inDays(1)));
    await svc.updateTask(c, early?.id ?? "", { status: "COMPLETED" });
    await scheduler().tick(inDays(1));
    expect((await bySeries()).map((t) => t.occurrence_date)).toEqual([day(inDays(1))]);
    await scheduler().tick(inDays(2));
    expect((await bySeries()).map((t) => t.occurrence_date).sort()).toEqual([day(inDays(1)), day(inDays(2))]);
  });

  it("when the series' zone is a day ahead of UTC, then the slot is the local day", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01", timezone: "Pacific/Auckland" } });
    // 2026-11-02T12:00Z is already Nov 3 in Auckland (UTC+13 in November).
    await scheduler().tick(at("2026-11-02T12:00:00Z"));
    expect(await days(c, head.id)).toEqual(["2026-11-03"]);
  });

  describe("an organization's occurrences made together (one transaction per 100)", () => {
    /** Every task number of the organization, in order. */
    const numbers = async (c: Caller) =>
      (await db.sql<{ n: number }[]>`select number::int as n from tasks where organization_id = ${c.organizationId} order by number`).map((r) => r.n);
    /** The due days of one series' occurrences (several series share the organization here). */
    const seriesDays = async (c: Caller, head: string) =>
      (await repo.listTasks(c.organizationId, { limit: 100, archived: false, series: Number(head.slice(2)) }))
        .parse()
        .data.map((t) => t.due_date?.slice(0, 10));
    type Heads = Awaited<ReturnType<typeof repo.recurringHeads>>;

    it("when many series of one organization are due, then one tick makes them all, numbered in a row, each with its own event", async () => {
      const c = caller();
      for (let i = 0; i < 150; i++) await series(c, { title: `s${i}`, recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      expect(await scheduler().tick(at("2026-11-02T09:00:00Z"))).toBeGreaterThanOrEqual(150);
      const all = await numbers(c);
      expect(all).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
      const created = await db.sql<{ n: number }[]>`
        select count(*)::int as n from events where organization_id = ${c.organizationId} and type = 'task.created'`;
      expect(created[0]?.n).toBe(300);
    });

    it("when some of a batch's slots were made meanwhile by another replica, then the batch is undone and the rest are made one by one: each slot once, no number lost", async () => {
      const c = caller();
      const heads = [];
      for (let i = 0; i < 5; i++) heads.push(await series(c, { title: `s${i}`, recurrence: { frequency: "DAILY", start_date: "2026-11-01" } }));
      const now = at("2026-11-02T09:00:00Z");
      // Replica B read the five series due; replica A then made two of them.
      const stale = (await repo.recurringHeads(now)).filter((h) => h.organization_id === c.organizationId);
      const first = new Set(heads.slice(0, 2).map((h) => h.id.slice(2)));
      await recurrenceScheduler(
        { ...deps, repo: { ...repo, recurringHeads: async () => stale.filter((h) => first.has(h.number)) as Heads }, boards: boardsAsked().port },
        log,
      ).tick(now);
      expect(await numbers(c)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      // B's check before making them missed A's (it ran just before A committed).
      const b = recurrenceScheduler(
        { ...deps, repo: { ...repo, recurringHeads: async () => stale as Heads, slotsTaken: async () => new Set<string>() }, boards: boardsAsked().port },
        log,
      );
      expect(await b.tick(now)).toBe(3);
      expect(await numbers(c)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      for (const h of heads) expect(await seriesDays(c, h.id)).toEqual(["2026-11-02"]);
    });

    it("when one series of a batch cannot be made, then the others are made all the same, and it is tried again on the next tick", async () => {
      const c = caller();
      const ok = await series(c, { title: "fine", recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      const broken = await series(c, { title: "broken", recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      const hidden = broken.id.slice(2);
      const s = recurrenceScheduler(
        {
          ...deps,
          // Its head is not found when the occurrences are made (as if gone meanwhile).
          tx: (fn) =>
            db.tx((t) => {
              const r = tasksRepo(t);
              return fn({ ...r, tasksByNumber: async (org: string, ns: number[]) => (await r.tasksByNumber(org, ns)).filter((x) => x.number !== hidden) });
            }),
          boards: boardsAsked().port,
        },
        log,
      );
      await s.tick(at("2026-11-02T09:00:00Z"));
      expect(await seriesDays(c, ok.id)).toEqual(["2026-11-02"]);
      expect(await seriesDays(c, broken.id)).toEqual([]);
      await scheduler().tick(at("2026-11-02T09:01:00Z"));
      expect(await seriesDays(c, broken.id)).toEqual(["2026-11-02"]);
      expect(await numbers(c)).toEqual([1, 2, 3, 4]);
    });
  });

  describe("rollover_enabled", () => {
    const num = (id: string) => Number(id.slice(2));

    it("when the latest occurrence is still open after its day, then it is asked onto its owner's board for each following day, once per day, in the section of its status, until completed", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", rollover_enabled: true } });
      const b = boardsAsked();
      const s = scheduler(b.port);
      await s.tick(at("2026-11-01T20:00:00Z"));
      expect(b.of(c), "its own day is not over").toEqual([]);
      await s.tick(at("2026-11-02T08:00:00Z"));
      await s.tick(at("2026-11-02T18:00:00Z"));
      const onNov2 = { organization_id: c.organizationId, user_id: "usr_sched", date: "2026-11-02", task_number: num(head.id), section: "TODO" };
      expect(b.of(c)).toEqual([onNov2]);
      await svc.updateTask(c, head.id, { status: "IN_REVIEW" });
      await s.tick(at("2026-11-03T08:00:00Z"));
      expect(b.of(c)).toEqual([onNov2, { ...onNov2, date: "2026-11-03", section: "PROGRESS" }]);
      await svc.updateTask(c, head.id, { status: "COMPLETED" });
      await s.tick(at("2026-11-04T08:00:00Z"));
      expect(b.of(c)).toHaveLength(2);
    });

    it("when a newer occurrence is made, then it takes over: the older one stops rolling and the newer rolls once its own day is over", async () => {
      const c = caller();
      // Mondays: Nov 2 (the head), Nov 9, ...
      const head = await series(c, { recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02", rollover_enabled: true } });
      const b = boardsAsked();
      const s = scheduler(b.port);
      await s.tick(at("2026-11-04T08:00:00Z"));
      await s.tick(at("2026-11-09T08:00:00Z"));
      await s.tick(at("2026-11-10T08:00:00Z"));
      const [next] = await occurrences(c, head.id);
      expect(next?.due_date).toBe("2026-11-09T00:00:00.000Z");
      expect(b.of(c).map((i) => [i.date, i.task_number])).toEqual([
        ["2026-11-04", num(head.id)],
        ["2026-11-10", num(next?.id ?? "T-0")],
      ]);
    });

    it("when rollover is off, the series paused, the occurrence archived or its due date moved ahead, then nothing is asked", async () => {
      const c = caller();
      const off = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const paused = await series(c, {
        recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", rollover_enabled: true, active: false },
      });
      const moved = await series(c, {
        due_date: "2026-11-20",
        recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", rollover_enabled: true },
      });
      // A weekly series whose first occurrence after the head gets archived.
      const weekly = await series(c, { recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02", rollover_enabled: true } });
      const b = boardsAsked();
      const s = scheduler(b.port);
      await s.tick(at("2026-11-09T08:00:00Z"));
      const [made] = (await occurrences(c, "none")).filter((t) => ![off.id, paused.id, moved.id, weekly.id].includes(t.id));
      expect(made?.due_date).toBe("2026-11-09T00:00:00.000Z");
      await svc.setArchived(c, made?.id ?? "", true);
      await s.tick(at("2026-11-10T08:00:00Z"));
      expect(b.of(c)).toEqual([]);
      // The moved one's day comes: it rolls from the day after.
      await s.tick(at("2026-11-21T08:00:00Z"));
      expect(b.of(c).map((i) => [i.date, i.task_number])).toEqual([["2026-11-21", num(moved.id)]]);
    });

    it("when the boards service fails, then the next tick asks again; once placed, no replica asks again that day, and the next day it is asked again", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", rollover_enabled: true } });
      const b = boardsAsked();
      let failing = true;
      const s = scheduler({
        rollOver: async (i) => {
          if (failing && i.organization_id === c.organizationId) throw new Error("boards unavailable");
          return b.port.rollOver(i);
        },
      });
      await s.tick(at("2026-11-02T08:00:00Z"));
      expect(b.of(c)).toEqual([]);
      failing = false;
      await s.tick(at("2026-11-02T08:01:00Z"));
      await s.tick(at("2026-11-02T08:02:00Z"));
      await scheduler(b.port).tick(at("2026-11-02T08:03:00Z"));
      await scheduler(b.port).tick(at("2026-11-03T00:00:00Z"));
      expect(b.of(c).map((i) => [i.date, i.task_number])).toEqual([
        ["2026-11-02", num(head.id)],
        ["2026-11-03", num(head.id)],
      ]);
    });

    it("when the series' zone is a day ahead of UTC, then the board is the local today", async () => {
      const c = caller();
      await series(c, {
        recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", timezone: "Pacific/Auckland", rollover_enabled: true },
      });
      const b = boardsAsked();
      await scheduler(b.port).tick(at("2026-11-02T12:00:00Z"));
      expect(b.of(c).map((i) => i.date)).toEqual(["2026-11-03"]);
    });
  });

  describe("wake-up times (a tick reads only the series that can have something to do)", () => {
    /** A scheduler whose ticks report which of the caller's series they read. */
    function watched(c: Caller) {
      const read: string[][] = [];
      const s = recurrenceScheduler(
        {
          ...deps,
          repo: {
            ...repo,
            recurringHeads: async (now: Date) => {
              const heads = await repo.recurringHeads(now);
              read.push(heads.filter((h) => h.organization_id === c.organizationId).map((h) => `T-${h.number}`));
              return heads;
            },
          },
          boards: boardsAsked().port,
        },
        log,
      );
      return { read, tick: async (iso: string) => s.tick(at(iso)) };
    }

    it("when a series has nothing to do, then it is not read again until the next day begins in its zone", async () => {
      const c = caller();
      const utc = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const auckland = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", timezone: "Pacific/Auckland" } });
      const w = watched(c);
      await w.tick("2026-11-02T10:00:00Z"); // Nov 2, 10:00 in UTC; Nov 2, 23:00 in Auckland
      await w.tick("2026-11-02T10:59:59Z");
      await w.tick("2026-11-02T11:00:00Z"); // Nov 3 begins in Auckland
      await w.tick("2026-11-02T23:59:59Z");
      await w.tick("2026-11-03T00:00:00Z"); // and in UTC
      expect(w.read.map((r) => r.sort())).toEqual([[utc.id, auckland.id].sort(), [], [auckland.id], [], [utc.id]]);
    });

    it("when the user changes the head or its latest occurrence, then the series is read on the next tick, and what the change made due happens", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      const w = watched(c);
      await w.tick("2026-11-02T08:00:00Z"); // makes Nov 2's occurrence
      await w.tick("2026-11-02T08:01:00Z"); // reads it once more (its latest just changed), then sleeps
      await w.tick("2026-11-02T08:02:00Z");
      expect(w.read).toEqual([[head.id], [head.id], []]);
      const [occurrence] = await occurrences(c, head.id);
      await svc.updateTask(c, occurrence?.id ?? "", { status: "IN_PROGRESS" });
      await w.tick("2026-11-02T08:03:00Z");
      await w.tick("2026-11-02T08:04:00Z");
      await svc.updateTask(c, head.id, { title: "renamed" });
      await w.tick("2026-11-02T08:05:00Z");
      // Pausing is a change of the head's recurrence; so is resuming, after which the latest slot due is made at once.
      await svc.updateTask(c, head.id, { recurrence: { frequency: "DAILY", start_date: "2026-11-01", active: false } });
      await w.tick("2026-11-02T08:06:00Z");
      await w.tick("2026-11-04T08:00:00Z");
      await svc.updateTask(c, head.id, { recurrence: { frequency: "DAILY", start_date: "2026-11-01", active: true } });
      await w.tick("2026-11-04T08:01:00Z");
      expect(w.read).toEqual([[head.id], [head.id], [], [head.id], [], [], [head.id], [head.id], [head.id]]);
      expect(await days(c, head.id)).toEqual(["2026-11-02", "2026-11-04"]);
    });

    it("when the head changes between the tick's read and its wake-up write, then the write leaves it, and the next tick reads it", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const read: string[][] = [];
      const racing = recurrenceScheduler(
        {
          ...deps,
          repo: {
            ...repo,
            recurringHeads: async (now: Date) => {
              const heads = await repo.recurringHeads(now);
              // A user's write lands after the read: the head is completed.
              if (heads.some((h) => h.organization_id === c.organizationId)) await svc.updateTask(c, head.id, { status: "COMPLETED" });
              return heads;
            },
          },
          boards: boardsAsked().port,
        },
        log,
      );
      await racing.tick(at("2026-11-02T08:00:00Z"));
      const w = watched(c);
      await w.tick("2026-11-02T08:01:00Z");
      read.push(...w.read);
      expect(read).toEqual([[head.id]]);
    });
  });
});
