import { describe, expect, it } from "vitest";
import { recurrenceSystem } from "../src/domain/recurrence/system.js";
import { repositories } from "../src/repo/repositories.js";
import { schedulerFixture } from "./scheduler-fixture.js";

// The recurrence scheduler: a series' occurrences, one per slot, as ticks make them (decision 0021).
const { db, resources, repos, svc, boardsAsked, scheduler, caller, occurrences, at, days, series } = schedulerFixture("tasks_scheduler_test");

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
    const bySeries = (
      await repos.search.page(c.organizationId, { filter: undefined, series: Number(head.id.slice(2)), sort: "-updated_at", limit: 100 })
    ).parse().data;
    expect(bySeries.map((t) => t.occurrence_date).sort()).toEqual(["2026-11-05", "2026-11-09", "2026-11-12"]);
  });

  it("when making an occurrence fails after its task was written, then nothing of it stays, and the next tick makes it once", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
    // A scheduler whose transaction dies after the task's insert, before the slot is recorded.
    const crashing = recurrenceSystem(
      {
        ...resources,
        tx: (fn) =>
          db.tx((t) => {
            const r = repositories(t);
            return fn({
              ...r,
              recurrence: {
                ...r.recurrence,
                recordSlots: async () => {
                  throw new Error("killed mid-way");
                },
              },
            });
          }),
      },
      { boards: boardsAsked().port },
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

  it("when the basis is completion, then nothing comes until the latest occurrence is completed; completing it makes the next at once, due one interval after, and ticks make no other", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", interval: 3, basis: "COMPLETION", start_date: "2026-11-01" } });
    const far = new Date(Date.now() + 30 * 86_400_000);
    await scheduler().tick(far);
    expect(await days(c, head.id)).toEqual([]);
    await svc.updateTask(c, head.id, { status: "COMPLETED" });
    const completedOn = new Date().toISOString().slice(0, 10);
    const threeOn = new Date(Date.parse(`${completedOn}T12:00:00Z`) + 3 * 86_400_000);
    expect(await days(c, head.id)).toEqual([threeOn.toISOString().slice(0, 10)]);
    await scheduler().tick(new Date(threeOn.getTime() - 86_400_000));
    await scheduler().tick(threeOn);
    // That one open, nothing more however long it waits.
    await scheduler().tick(far);
    expect(await days(c, head.id)).toEqual([threeOn.toISOString().slice(0, 10)]);
  });

  it("when a completion-basis series' latest occurrence is completed or archived while the series is paused, then nothing is made; once resumed, the scheduler makes the next one interval after the day it was completed or archived", async () => {
    const c = caller();
    const rule = { frequency: "DAILY", interval: 2, basis: "COMPLETION", start_date: "2026-11-01" } as const;
    const head = await series(c, { recurrence: { ...rule, active: false } });
    const bySeries = async () =>
      (await repos.search.page(c.organizationId, { filter: undefined, series: Number(head.id.slice(2)), sort: "-updated_at", limit: 100 })).parse().data;
    const day = (at: Date) => at.toISOString().slice(0, 10);
    const now = new Date();
    const inDays = (n: number) => new Date(Date.parse(`${day(now)}T12:00:00Z`) + n * 86_400_000);
    const setActive = (active: boolean) => svc.updateTask(c, head.id, { recurrence: { ...rule, active } });
    // The head was completed four days ago, paused: its next occurrence was due two days ago, and is made once resumed.
    await svc.updateTask(c, head.id, { status: "COMPLETED" });
    expect(await bySeries()).toEqual([]);
    await setActive(true);
    await db.sql`update tasks set updated_at = updated_at - interval '4 days' where organization_id = ${c.organizationId} and number = ${Number(head.id.slice(2))}`;
    await scheduler().tick(now);
    const [first] = await bySeries();
    expect(first?.occurrence_date).toBe(day(inDays(-2)));
    // Dismissed today (archived, never completed) while paused: the series goes on from today, not stalled.
    await setActive(false);
    await svc.setArchived(c, first?.id ?? "", true);
    expect(await bySeries()).toEqual([]);
    await setActive(true);
    await scheduler().tick(inDays(1));
    expect(await bySeries()).toEqual([]);
    await scheduler().tick(inDays(2));
    expect((await bySeries()).map((t) => t.occurrence_date)).toEqual([day(inDays(2))]);
  });

  it("when the basis is completion and an occurrence is completed before its own day, then the next is one interval after that day, not the same slot again", async () => {
    const c = caller();
    const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
    const bySeries = async () =>
      (await repos.search.page(c.organizationId, { filter: undefined, series: Number(head.id.slice(2)), sort: "-updated_at", limit: 100 })).parse().data;
    const day = (at: Date) => at.toISOString().slice(0, 10);
    const inDays = (n: number) => new Date(Date.parse(`${day(new Date())}T12:00:00Z`) + n * 86_400_000);
    await svc.updateTask(c, head.id, { status: "COMPLETED" });
    const [early] = await bySeries();
    expect(early?.occurrence_date).toBe(day(inDays(1)));
    // Completed today, a day before its own.
    await svc.updateTask(c, early?.id ?? "", { status: "COMPLETED" });
    await scheduler().tick(inDays(1));
    expect((await bySeries()).map((t) => t.occurrence_date).sort()).toEqual([day(inDays(1)), day(inDays(2))]);
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
});
