import type { Caller } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { recurrenceSystem } from "../src/domain/recurrence/system.js";
import { repositories } from "../src/repo/repositories.js";
import { schedulerFixture } from "./scheduler-fixture.js";

// The recurrence scheduler: an organization's due occurrences made together, and what a batch does when part of it cannot be made.
const { db, resources, repos, boardsAsked, scheduler, withRecurrence, caller, at, series } = schedulerFixture("tasks_scheduler_batches_test");

describe("the recurrence scheduler", () => {
  describe("an organization's occurrences made together (one transaction per 100)", () => {
    /** Every task number of the organization, in order. */
    const numbers = async (c: Caller) =>
      (await db.sql<{ n: number }[]>`select number::int as n from tasks where organization_id = ${c.organizationId} order by number`).map((r) => r.n);
    /** The due days of one series' occurrences (several series share the organization here). */
    const seriesDays = async (c: Caller, head: string) =>
      (await repos.search.page(c.organizationId, { filter: undefined, series: Number(head.slice(2)), sort: "-updated_at", limit: 100 }))
        .parse()
        .data.map((t) => t.due_date?.slice(0, 10));
    type Heads = Awaited<ReturnType<typeof repos.recurrence.heads>>;

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
      const stale = (await repos.recurrence.heads(now)).filter((h) => h.organization_id === c.organizationId);
      const first = new Set(heads.slice(0, 2).map((h) => h.id.slice(2)));
      await recurrenceSystem(withRecurrence({ heads: async () => stale.filter((h) => first.has(h.number)) as Heads }), { boards: boardsAsked().port }).tick(
        now,
      );
      expect(await numbers(c)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      // B's check before making them missed A's (it ran just before A committed).
      const b = recurrenceSystem(withRecurrence({ heads: async () => stale as Heads, slotsTaken: async () => new Set<string>() }), {
        boards: boardsAsked().port,
      });
      expect(await b.tick(now)).toBe(3);
      expect(await numbers(c)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      for (const h of heads) expect(await seriesDays(c, h.id)).toEqual(["2026-11-02"]);
    });

    it("when one series of a batch cannot be made, then the others are made all the same, and it is tried again on the next tick", async () => {
      const c = caller();
      const ok = await series(c, { title: "fine", recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      const broken = await series(c, { title: "broken", recurrence: { frequency: "DAILY", start_date: "2026-11-01" } });
      const hidden = broken.id.slice(2);
      const s = recurrenceSystem(
        {
          ...resources,
          // Its head is not found when the occurrences are made (as if gone meanwhile).
          tx: (fn) =>
            db.tx((t) => {
              const r = repositories(t);
              const byNumber = async (org: string, ns: number[]) => (await r.tasks.byNumber(org, ns)).filter((x) => x.number !== hidden);
              return fn({ ...r, tasks: { ...r.tasks, byNumber } });
            }),
        },
        { boards: boardsAsked().port },
      );
      await s.tick(at("2026-11-02T09:00:00Z"));
      expect(await seriesDays(c, ok.id)).toEqual(["2026-11-02"]);
      expect(await seriesDays(c, broken.id)).toEqual([]);
      await scheduler().tick(at("2026-11-02T09:01:00Z"));
      expect(await seriesDays(c, broken.id)).toEqual(["2026-11-02"]);
      expect(await numbers(c)).toEqual([1, 2, 3, 4]);
    });
  });
});
