import type { DailySection, Recurrence, RollOverInput, TaskStatus } from "@tasksvc/contracts";
import { recurrenceFailures, recurrenceOccurrences, recurrenceRollovers, recurrenceSeriesRead, recurrenceTickDuration } from "@tasksvc/telemetry";
import type { HeadRow as Head } from "../../repo/recurrence-repo.js";
import { ReferenceVanished } from "../../repo/task-create.js";
import { makeOccurrences, NotMade } from "./occurrences.js";
import { type Day, dueSlot, firstSlot, localDay, nextDayStart, ruleOf, slotAfterDone } from "./slots.js";
import type { TasksResources } from "../resources.js";

interface Due {
  h: Head;
  slot: Day;
}
/** A create statement of this many tasks stays well under a second, and holds its organization's number counter no longer. */
const BATCH = 100;

/** The boards service places each task once per day, however often requested. */
export interface RolloverPort {
  request(input: RollOverInput): Promise<void>;
}

const sectionFor = (status: TaskStatus): DailySection => (status === "IN_PROGRESS" || status === "IN_REVIEW" ? "PROGRESS" : "TODO");

/**
 * Exactly once per slot: the task and its (series, slot) record are written in one transaction,
 * and a slot recorded meanwhile (another replica, a retried tick) undoes ours. The rules are in
 * decision 0021.
 */
export function recurrenceSystem(res: TasksResources, { boards }: { boards: RolloverPort }) {
  const { log } = res;
  function lastSlot(h: Head): Day | null {
    if (h.last_slot !== null) return h.last_slot;
    const r: Recurrence = h.recurrence;
    return firstSlot(r, localDay(h.created_at, r.timezone));
  }

  function due(h: Head, now: Date): Day | null {
    const r: Recurrence = h.recurrence;
    if (!r.active) return null;
    const today = localDay(now, r.timezone);
    const rule = ruleOf(r, localDay(h.created_at, r.timezone));
    const last = lastSlot(h);
    if (last === null) return null;
    if (r.basis === "SCHEDULE") return dueSlot(rule, last, today);
    const doneAt = h.latest_status === "COMPLETED" ? h.latest_updated_at : h.latest_archived ? h.latest_archived_at : null;
    if (doneAt === null) return null;
    // Done before its own day (a replica whose clock ran ahead made it early) counts from that day.
    const next = slotAfterDone(r, last, h.made, localDay(doneAt, r.timezone));
    return next === null || next > today ? null : next;
  }

  async function makeAll(org: string, batch: Due[]): Promise<void> {
    await res.tx((r) =>
      makeOccurrences(
        r,
        org,
        batch.map(({ h, slot }) => ({ head: Number(h.number), slot, after: h.last_slot })),
      ),
    );
    res.written();
  }

  /** A batch that cannot be made whole is made one series at a time, so one series' trouble costs the others nothing. */
  async function occur(org: string, batch: Due[]): Promise<number> {
    const taken = await res.repos.recurrence.slotsTaken(
      org,
      batch.map((d) => ({ head: Number(d.h.number), slot: d.slot })),
    );
    const open = batch.filter((d) => !taken.has(`${d.h.number}/${d.slot}`));
    if (open.length === 0) return 0;
    try {
      await makeAll(org, open);
      return open.length;
    } catch (e) {
      if (!(e instanceof NotMade || e instanceof ReferenceVanished)) throw e;
      if (open.length === 1) {
        if (e instanceof NotMade) return 0;
        throw e;
      }
    }
    let made = 0;
    for (const d of open) {
      try {
        made += await occur(org, [d]);
      } catch (err) {
        recurrenceFailures.inc({ what: "occurrence" });
        log.error({ err, organization_id: org, task: `T-${d.h.number}`, slot: d.slot }, "could not make a recurring task's occurrence");
      }
    }
    return made;
  }

  function rollover(h: Head, now: Date): RollOverInput | null {
    const r: Recurrence = h.recurrence;
    if (!r.active || !r.rollover_enabled || h.latest_archived || h.latest_status === "COMPLETED") return null;
    const today = localDay(now, r.timezone);
    // Its due date (the user may have moved it), else its slot.
    const day = h.latest_due ?? lastSlot(h);
    if (day === null || day >= today) return null;
    return {
      organization_id: h.organization_id,
      user_id: h.owner_user_id,
      date: today,
      task_number: Number(h.latest_number),
      section: sectionFor(h.latest_status),
    };
  }

  async function tickAt(now: Date): Promise<number> {
    let made = 0;
    const done: Array<{ org: string; number: number; seen: string; wake: Date }> = [];
    const dueByOrg = new Map<string, Due[]>();
    const heads = await res.repos.recurrence.heads(now);
    recurrenceSeriesRead.inc(heads.length);
    for (const h of heads) {
      const slot = due(h, now);
      if (slot !== null) {
        // Its latest occurrence is about to change, so the next tick looks at it again for its rollover: not put to sleep.
        const list = dueByOrg.get(h.organization_id) ?? [];
        list.push({ h, slot });
        dueByOrg.set(h.organization_id, list);
        continue;
      }
      const place = rollover(h, now);
      if (place !== null) {
        try {
          await boards.request(place);
          recurrenceRollovers.inc({ outcome: "requested" });
        } catch (err) {
          recurrenceRollovers.inc({ outcome: "failed" });
          recurrenceFailures.inc({ what: "rollover" });
          log.error(
            { err, organization_id: h.organization_id, task: `T-${place.task_number}`, date: place.date },
            "could not roll a recurring task's occurrence onto a board",
          );
          continue;
        }
      }
      done.push({ org: h.organization_id, number: Number(h.number), seen: h.seen, wake: nextDayStart(now, h.recurrence.timezone) });
    }
    for (const [org, list] of dueByOrg) {
      for (let i = 0; i < list.length; i += BATCH) {
        const batch = list.slice(i, i + BATCH);
        try {
          made += await occur(org, batch);
        } catch (err) {
          recurrenceFailures.inc({ what: "occurrence" }, batch.length);
          log.error({ err, organization_id: org, series: batch.length }, "could not make recurring tasks' occurrences");
        }
      }
    }
    await res.repos.recurrence.wakeAt(done);
    return made;
  }

  return {
    /**
     * Reads only the series whose wake-up time has come (migration 0008), and puts each it is done with
     * to sleep until the next day begins in its zone: nothing can come sooner, and what a user changes wakes it.
     */
    async tick(now: Date): Promise<number> {
      const endTimer = recurrenceTickDuration.startTimer();
      try {
        const made = await tickAt(now);
        recurrenceOccurrences.inc(made);
        return made;
      } finally {
        endTimer();
      }
    },
  };
}
export type RecurrenceSystem = ReturnType<typeof recurrenceSystem>;
