import { describe, expect, it } from "vitest";
import { schedulerFixture } from "./scheduler-fixture.js";

// The recurrence scheduler: unfinished occurrences rolled onto their owners' boards (what it asks of the boards service).
const { svc, boardsAsked, scheduler, caller, occurrences, at, series } = schedulerFixture("tasks_scheduler_rollover_test");

describe("the recurrence scheduler", () => {
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
        request: async (i) => {
          if (failing && i.organization_id === c.organizationId) throw new Error("the rollover stream is unavailable");
          return b.port.request(i);
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
});
