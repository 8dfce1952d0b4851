import type { Caller } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { recurrenceSystem } from "../src/domain/recurrence/system.js";
import { schedulerFixture } from "./scheduler-fixture.js";

// The recurrence scheduler's wake-up times: a tick reads only the series that can have something to do.
const { repos, svc, svcAt, boardsAsked, withRecurrence, caller, occurrences, at, days, series } = schedulerFixture("tasks_scheduler_wake_test");

describe("the recurrence scheduler", () => {
  describe("wake-up times (a tick reads only the series that can have something to do)", () => {
    /** A scheduler whose ticks report which of the caller's series they read. */
    function watched(c: Caller) {
      const read: string[][] = [];
      const s = recurrenceSystem(
        withRecurrence({
          heads: async (now: Date) => {
            const heads = await repos.recurrence.heads(now);
            read.push(heads.filter((h) => h.organization_id === c.organizationId).map((h) => `T-${h.number}`));
            return heads;
          },
        }),
        { boards: boardsAsked().port },
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

    it("when a completion makes the next occurrence, then the series is read once more (the completion woke it), finds it made, and sleeps until the next day", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const w = watched(c);
      await w.tick("2026-11-02T08:00:00Z");
      await w.tick("2026-11-02T08:01:00Z");
      await svcAt("2026-11-02T09:00:00Z").updateTask(c, head.id, { status: "COMPLETED" });
      expect(await days(c, head.id)).toEqual(["2026-11-03"]);
      await w.tick("2026-11-02T09:01:00Z");
      await w.tick("2026-11-02T09:02:00Z");
      await w.tick("2026-11-03T00:00:00Z");
      expect(w.read).toEqual([[head.id], [], [head.id], [], [head.id]]);
      expect(await days(c, head.id)).toEqual(["2026-11-03"]);
    });

    it("when the head changes between the tick's read and its wake-up write, then the write leaves it, and the next tick reads it", async () => {
      const c = caller();
      const head = await series(c, { recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: "2026-11-01" } });
      const read: string[][] = [];
      const racing = recurrenceSystem(
        withRecurrence({
          heads: async (now: Date) => {
            const heads = await repos.recurrence.heads(now);
            // A user's write lands after the read: the head is completed.
            if (heads.some((h) => h.organization_id === c.organizationId)) await svc.updateTask(c, head.id, { status: "COMPLETED" });
            return heads;
          },
        }),
        { boards: boardsAsked().port },
      );
      await racing.tick(at("2026-11-02T08:00:00Z"));
      const w = watched(c);
      await w.tick("2026-11-02T08:01:00Z");
      read.push(...w.read);
      expect(read).toEqual([[head.id]]);
    });
  });
});
