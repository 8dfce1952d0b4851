import type { DailySection, Recurrence, RollOverInput, TaskStatus } from "@tasksvc/contracts";
import { recurrenceFailures, recurrenceOccurrences, recurrenceRollovers, recurrenceSeriesRead, recurrenceTickDuration } from "@tasksvc/telemetry";
import type { HeadRow as Head } from "../../repo/recurrence-repo.js";
import { ReferenceVanished } from "../../repo/task-create.js";
import { makeOccurrences, NotMade } from "./occurrences.js";
import { type Day, dueSlot, firstSlot, localDay, nextDayStart, ruleOf, slotAfterDone } from "./slots.js";
import type { TasksResources } from "../resources.js";

/** A series due to get the occurrence of `slot`. */
interface Due {
  h: Head;
  slot: Day;
}
/**
 * Occurrences made by one transaction at most: a create statement of this many tasks stays well
 * under a second, and holds its organization's number counter no longer.
 */
const BATCH = 100;

/**
 * Where rollover requests go: the rollover stream, which the boards service consumes (it places
 * each task once per day, however often requested). Resolves once the stream has the request.
 */
export interface RolloverPort {
  request(input: RollOverInput): Promise<void>;
}

/** The board section an unfinished occurrence rolls onto: work under way goes to PROGRESS. */
const sectionFor = (status: TaskStatus): DailySection => (status === "IN_PROGRESS" || status === "IN_REVIEW" ? "PROGRESS" : "TODO");

/**
 * The recurrence system (decision 0021): makes the occurrences of recurring tasks. The task that
 * carries a recurrence heads its series and is its first occurrence, on the rule's first slot. Each later
 * occurrence is a new task: the head's title, description, priority, notes, story points,
 * projects and parent, status TODO, due on its slot, with no recurrence of its own. It is created
 * like any task (numbered, versioned, `task.created` through the outbox).
 *
 * - SCHEDULE: the latest slot due by today (in the series' zone) gets an occurrence, whether or
 *   not the last one was done. A scheduler that was down makes one occurrence for the latest
 *   missed slot, not one per missed day.
 * - COMPLETION: once the latest occurrence is COMPLETED (or archived instead), the next is due
 *   one interval after the day it was completed (or archived); a tick makes it when that day
 *   comes, unless the write that completed it did (next point).
 * - Either basis: the write that completes or archives the latest occurrence makes the next one
 *   itself (occurrences.ts, occurAfterDone), so a tick mostly finds it made. Ticks make what no
 *   such write did: the slots that come while the latest is still open (SCHEDULE), and the next
 *   of a series done while it was paused, then resumed.
 * - `active: false` makes nothing; after resuming, the latest slot due is made (as after downtime).
 * - `end_date` and `max_occurrences` end the series (the head counts as the first occurrence).
 * - `rollover_enabled`: while the series' latest occurrence is unfinished after its day (its due
 *   date, which the user may have moved, else its slot), it is put on its owner's board for each
 *   following day (today in the series' zone), once per day, until it is completed or archived,
 *   the series is paused, or a newer occurrence is made.
 *
 * Exactly once per slot: the task and its (series, slot) record are written in one transaction,
 * and a slot recorded meanwhile (another replica, a retried tick) undoes ours. `tick(now)` takes
 * the time as an argument: the service passes the clock, tests pass any instant.
 */
export function recurrenceSystem(res: TasksResources, { boards }: { boards: RolloverPort }) {
  const { log } = res;
  /** The slot of a series' latest occurrence (the head's is the rule's first), or null when it has none. */
  function lastSlot(h: Head): Day | null {
    if (h.last_slot !== null) return h.last_slot;
    const r: Recurrence = h.recurrence;
    return firstSlot(r, localDay(h.created_at, r.timezone));
  }

  /** The slot a series is due to get now, or null. */
  function due(h: Head, now: Date): Day | null {
    const r: Recurrence = h.recurrence;
    if (!r.active) return null;
    const today = localDay(now, r.timezone);
    const rule = ruleOf(r, localDay(h.created_at, r.timezone));
    const last = lastSlot(h);
    if (last === null) return null;
    if (r.basis === "SCHEDULE") return dueSlot(rule, last, today);
    // COMPLETION: one interval after the latest occurrence was done: completed, or archived
    // instead (dismissed), counted from the day it was completed, else from the day it was archived.
    const doneAt = h.latest_status === "COMPLETED" ? h.latest_updated_at : h.latest_archived ? h.latest_archived_at : null;
    if (doneAt === null) return null;
    // Done before its own day (a replica whose clock ran ahead made it early) counts from that day.
    const next = slotAfterDone(r, last, h.made, localDay(doneAt, r.timezone));
    return next === null || next > today ? null : next;
  }

  /**
   * Makes the occurrences of due series of one organization in one transaction (makeOccurrences:
   * one read of the heads, one create statement, one insert of slot records). Throws NotMade when
   * a slot, or a later one of its series, was recorded meanwhile or a head is gone, and
   * ReferenceVanished when a head's project or parent went: the transaction undoes them all,
   * numbers included.
   */
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

  /**
   * Makes the due occurrences of one organization's series; answers how many it made (none for a
   * slot made already). A batch that cannot be made whole (a slot recorded meanwhile by another
   * replica, a head, project or parent gone) is made one series at a time instead, so one series'
   * trouble costs the others nothing, and each series' own is logged.
   */
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

  /**
   * The board placement a series' latest occurrence is due, or null: rollover on, series active,
   * the occurrence unfinished and its day (due date, else slot) over in the series' zone. The
   * board is today's there.
   */
  function rollover(h: Head, now: Date): RollOverInput | null {
    const r: Recurrence = h.recurrence;
    if (!r.active || !r.rollover_enabled || h.latest_archived || h.latest_status === "COMPLETED") return null;
    const today = localDay(now, r.timezone);
    // Its day is its due date (the user may have moved it), else its slot.
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

  /** One tick's work (tick() adds its metrics). */
  async function tickAt(now: Date): Promise<number> {
    let made = 0;
    const done: Array<{ org: string; number: number; seen: string; wake: Date }> = [];
    const dueByOrg = new Map<string, Due[]>();
    const heads = await res.repos.recurrence.heads(now);
    recurrenceSeriesRead.inc(heads.length);
    for (const h of heads) {
      const slot = due(h, now);
      if (slot !== null) {
        // Its latest occurrence is about to change (here or on another replica): the next tick
        // looks at it again, for its rollover. So it is not put to sleep.
        const list = dueByOrg.get(h.organization_id) ?? [];
        list.push({ h, slot });
        dueByOrg.set(h.organization_id, list);
        continue;
      }
      const place = rollover(h, now);
      if (place !== null) {
        try {
          // Once per task and day by the boards service's own record, however often requested.
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
     * Makes every occurrence due at `now`, then rolls unfinished ones onto today's boards; answers
     * how many occurrences it made. Reads only the series whose wake-up time has come (migration
     * 0008), and puts each it is done with to sleep until the next day begins in its zone: no slot,
     * rollover or completion's next day can come sooner, and what a user changes wakes it. One
     * failing series does not stop the others; it is looked at again on the next tick.
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
