import type { Caller } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { recurrenceSystem } from "../src/domain/recurrence/system.js";
import { schedulerFixture } from "./scheduler-fixture.js";

// The recurrence scheduler with the writes that complete or archive a series' latest occurrence, which make the next one themselves.
const { db, repos, svc, svcAt, boardsAsked, scheduler, withRecurrence, caller, at, series } = schedulerFixture("tasks_scheduler_completion_test");

describe("the recurrence scheduler", () => {
  describe("the next occurrence made by the write that completes or archives the latest one", () => {
    type Heads = Awaited<ReturnType<typeof repos.recurrence.heads>>;
    /** A series' occurrences not archived, by slot. */
    const bySeries = async (c: Caller, head: string) =>
      (await repos.search.page(c.organizationId, { filter: undefined, series: Number(head.slice(2)), sort: "-updated_at", limit: 100 }))
        .parse()
        .data.sort((a, b) => String(a.occurrence_date).localeCompare(String(b.occurrence_date)));
    const slotsOf = async (c: Caller, head: string) => (await bySeries(c, head)).map((t) => t.occurrence_date);
    const numbers = async (c: Caller) =>
      (await db.sql<{ n: number }[]>`select number::int as n from tasks where organization_id = ${c.organizationId} order by number`).map((r) => r.n);

    it("when a recurring task is created without a due date, then it is due on its first slot, the day in its zone; a due date given is kept", async () => {
      const c = caller();
      // Nov 2, 12:00 UTC is already Nov 3 in Auckland.
      const s = svcAt("2026-11-02T12:00:00Z");
      // 2026-12-02 is a Wednesday: the first Monday from it is Dec 7.
      const weekly = await s.createTask(c, { title: "w", recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2026-12-02" } });
      const auckland = await s.createTask(c, { title: "a", recurrence: { frequency: "DAILY", timezone: "Pacific/Auckland" } });
      const given = await s.createTask(c, { title: "g", due_date: "2026-12-24", recurrence: { frequency: "DAILY" } });
      const plain = await s.createTask(c, { title: "p" });
      expect([weekly, auckland, given, plain].map((t) => t.due_date)).toEqual([
        "2026-12-07T00:00:00.000Z",
        "2026-11-03T00:00:00.000Z",
        "2026-12-24T00:00:00.000Z",
        null,
      ]);
      expect(await svc.getTask(c, weekly.id)).toEqual(weekly);
    });

    it("when the latest occurrence of a completion-basis series is completed or archived, then the next is made by that write: due one interval after, with its slot, its version and its task.created event", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", interval: 3, basis: "COMPLETION", start_date: "2026-11-01" } });
      await svcAt("2026-11-05T10:00:00Z").updateTask(c, head.id, { status: "COMPLETED" });
      const [next] = await bySeries(c, head.id);
      expect(next).toMatchObject({
        title: "water the plants",
        status: "TODO",
        due_date: "2026-11-08T00:00:00.000Z",
        occurrence_date: "2026-11-08",
        series_task_id: head.id,
        recurrence: null,
      });
      const id = next?.id ?? "";
      const events = await db.sql<{ type: string; data: unknown }[]>`
        select type, payload->'data' as data from events where organization_id = ${c.organizationId} and payload->'data'->>'id' = ${id}`;
      expect(events.map((e) => e.type)).toEqual(["task.created"]);
      expect(events[0]?.data).toStrictEqual(await svc.getTask(c, id));
      expect((await svc.history(c, id, 10, undefined)).data).toHaveLength(1);
      // Dismissed (archived) on Nov 9: one interval after that day.
      await svcAt("2026-11-09T10:00:00Z").setArchived(c, id, true);
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-12"]);
      // The ticks find it made.
      await scheduler().tick(at("2026-11-12T10:00:00Z"));
      await scheduler().tick(at("2026-11-20T10:00:00Z"));
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-12"]);
    });

    it("when the latest occurrence of a schedule-basis series is completed, then the rule's next slot after it that is not before today is made at once: done early, the next shows; long overdue, one from today on, not a backlog", async () => {
      const c = caller();
      // Mondays from Nov 2 (the head's slot).
      const head = await series(c, { recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02" } });
      await svcAt("2026-11-01T10:00:00Z").updateTask(c, head.id, { status: "COMPLETED" });
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-09"]);
      await scheduler().tick(at("2026-11-09T10:00:00Z"));
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-09"]);
      const [nov9] = await bySeries(c, head.id);
      // Completed on Wednesday Nov 25: not Nov 16 and Nov 23, but Monday Nov 30.
      await svcAt("2026-11-25T10:00:00Z").updateTask(c, nov9?.id ?? "", { status: "COMPLETED" });
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-09", "2026-11-30"]);
      // A slot whose day comes with the latest still open is the scheduler's, as before.
      await scheduler().tick(at("2026-11-30T10:00:00Z"));
      await scheduler().tick(at("2026-12-07T10:00:00Z"));
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-09", "2026-11-30", "2026-12-07"]);
    });

    it("when an occurrence that is not the series' latest is completed, or the latest is re-opened and completed again, then nothing more is made", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      await scheduler().tick(at("2026-11-02T08:00:00Z"));
      const s = svcAt("2026-11-02T10:00:00Z");
      await s.updateTask(c, head.id, { status: "COMPLETED" });
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-02"]);
      const [nov2] = await bySeries(c, head.id);
      const id = nov2?.id ?? "";
      await s.updateTask(c, id, { status: "COMPLETED" });
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-02", "2026-11-03"]);
      await s.updateTask(c, id, { status: "TODO" });
      await s.updateTask(c, id, { status: "COMPLETED" });
      await s.setArchived(c, id, true);
      await s.setArchived(c, id, false);
      expect(await slotsOf(c, head.id)).toEqual(["2026-11-02", "2026-11-03"]);
    });

    it("when the series is paused, ended, counted out or its head archived, then completing the latest occurrence makes nothing", async () => {
      const c = caller();
      const s = svcAt("2026-11-01T10:00:00Z");
      const complete = async (id: string) => s.updateTask(c, id, { status: "COMPLETED" });
      const paused = await series(c, { title: "paused", recurrence: { frequency: "DAILY", start_date: "2026-11-01", active: false } });
      await complete(paused.id);
      expect(await slotsOf(c, paused.id)).toEqual([]);
      const ended = await series(c, { title: "ended", recurrence: { frequency: "DAILY", start_date: "2026-11-01", end_date: "2026-11-02" } });
      await complete(ended.id);
      await complete((await bySeries(c, ended.id))[0]?.id ?? "");
      expect(await slotsOf(c, ended.id)).toEqual(["2026-11-02"]);
      const counted = await series(c, {
        title: "counted",
        recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01", max_occurrences: 2 },
      });
      await complete(counted.id);
      await complete((await bySeries(c, counted.id))[0]?.id ?? "");
      expect(await slotsOf(c, counted.id)).toEqual(["2026-11-02"]);
      const archived = await series(c, { title: "archived", recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      await s.setArchived(c, archived.id, true);
      expect(await slotsOf(c, archived.id)).toEqual([]);
    });

    it("when two writes complete or archive the latest occurrence at once, then one next occurrence is made", async () => {
      const c = caller();
      const a = await series(c, { title: "a", recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const b = await series(c, { title: "b", recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const s = svcAt("2026-11-05T10:00:00Z");
      await Promise.all([s.updateTask(c, a.id, { status: "COMPLETED" }), s.updateTask(c, a.id, { status: "COMPLETED" })]);
      expect(await slotsOf(c, a.id)).toEqual(["2026-11-06"]);
      await s.updateTask(c, b.id, { status: "COMPLETED" });
      const b1 = (await bySeries(c, b.id))[0]?.id ?? "";
      await Promise.all([s.updateTask(c, b1, { status: "COMPLETED" }), s.setArchived(c, b1, true)]);
      expect(
        (await repos.search.page(c.organizationId, { filter: undefined, series: Number(b.id.slice(2)), sort: "-updated_at", limit: 100 })).parse().data,
      ).toHaveLength(1);
      expect(await numbers(c)).toEqual([1, 2, 3, 4, 5]);
    });

    it("when a tick decided on a read from before a completion made the next occurrence, then the tick makes no twin of it and no second, earlier one, and no number is lost", async () => {
      const c = caller();
      const weekly = await series(c, { title: "weekly", recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02" } });
      const daily = await series(c, { title: "daily", recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      const staleAt = async (iso: string, head: string) =>
        (await repos.recurrence.heads(at(iso))).filter((h) => h.organization_id === c.organizationId && `T-${h.number}` === head) as Heads;
      const late = (stale: Heads) =>
        recurrenceSystem(withRecurrence({ heads: async () => stale, slotsTaken: async () => new Set<string>() }), { boards: boardsAsked().port });
      // Monday Nov 9 has begun: a replica reads the weekly series (Nov 9 is due); the user then
      // completes the head, which makes Nov 9; the replica, past its check, makes Nov 9 too.
      const weeklyRead = await staleAt("2026-11-09T00:00:05Z", weekly.id);
      expect(weeklyRead).toHaveLength(1);
      await svcAt("2026-11-09T00:00:06Z").updateTask(c, weekly.id, { status: "COMPLETED" });
      expect(await late(weeklyRead).tick(at("2026-11-09T00:00:05Z"))).toBe(0);
      expect(await slotsOf(c, weekly.id)).toEqual(["2026-11-09"]);
      // A replica read the daily series on Nov 5 (Nov 5 due); the user, on Nov 6, completes the
      // head, which makes Nov 6: the replica's Nov 5 would be a second catch-up occurrence.
      const dailyRead = await staleAt("2026-11-05T10:00:00Z", daily.id);
      await svcAt("2026-11-06T10:00:00Z").updateTask(c, daily.id, { status: "COMPLETED" });
      expect(await late(dailyRead).tick(at("2026-11-05T10:00:00Z"))).toBe(0);
      expect(await slotsOf(c, daily.id)).toEqual(["2026-11-06"]);
      expect(await numbers(c)).toEqual([1, 2, 3, 4]);
    });

    it("when completions and the ticks of two replicas race on many series, then each slot has one occurrence, numbered without a gap", async () => {
      const c = caller();
      const heads = [];
      for (let i = 0; i < 6; i++)
        heads.push(await series(c, { title: `s${i}`, recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02" } }));
      const now = "2026-11-09T00:00:05Z";
      const s = svcAt(now);
      await Promise.all([...heads.map((h) => s.updateTask(c, h.id, { status: "COMPLETED" })), scheduler().tick(at(now)), scheduler().tick(at(now))]);
      for (const h of heads) expect(await slotsOf(c, h.id)).toEqual(["2026-11-09"]);
      expect(await numbers(c)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    });
  });
});
