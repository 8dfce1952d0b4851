import type { DailySection, Recurrence, RollOverInput, TaskStatus } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { Content, TasksRepo } from "../repo/tasks-repo.js";
import { type Day, dueSlot, localDay, nextDayStart, ruleOf, slotAfterCompletion, slotFrom } from "./recurrence.js";
import type { TasksDeps } from "./tasks-service.js";

/**
 * Thrown inside an occurrence's transaction to undo it: its slot was recorded meanwhile (another
 * replica, a retried tick), or its head is gone.
 */
class NotMade extends Error {}

/** One series as the scheduler sees it (TasksRepo.recurringHeads). */
type Head = Awaited<ReturnType<TasksRepo["recurringHeads"]>>[number];

/** Where rollover places an unfinished occurrence: the boards service's internal `rollOver`. */
export interface RolloverPort {
  /** Places the task on the owner's board for the day, once per task and day; false when it was before. */
  rollOver(input: RollOverInput): Promise<boolean>;
}

/** The board section an unfinished occurrence rolls onto: work under way goes to PROGRESS. */
const sectionFor = (status: TaskStatus): DailySection => (status === "IN_PROGRESS" || status === "IN_REVIEW" ? "PROGRESS" : "TODO");

/**
 * Issue 16 (decision 0021): makes the occurrences of recurring tasks. The task that carries a
 * recurrence heads its series and is its first occurrence, on the rule's first slot. Each later
 * occurrence is a new task: the head's title, description, priority, notes, story points,
 * projects and parent, status TODO, due on its slot, with no recurrence of its own. It is created
 * like any task (numbered, versioned, `task.created` through the outbox).
 *
 * - SCHEDULE: the latest slot due by today (in the series' zone) gets an occurrence, whether or
 *   not the last one was done. A scheduler that was down makes one occurrence for the latest
 *   missed slot, not one per missed day.
 * - COMPLETION: once the latest occurrence is COMPLETED, the next is due one interval after the
 *   day it was completed; it is made when that day comes.
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
export function recurrenceScheduler(deps: Pick<TasksDeps, "repo" | "tx" | "written"> & { boards: RolloverPort }, log: Logger) {
  /** The slot of a series' latest occurrence (the head's is the rule's first), or null when it has none. */
  function lastSlot(h: Head): Day | null {
    if (h.last_slot !== null) return h.last_slot;
    const r: Recurrence = h.recurrence;
    const begun = localDay(h.created_at, r.timezone);
    return slotFrom(ruleOf(r, begun), r.start_date ?? begun);
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
    // COMPLETION: after the latest occurrence is completed, one interval on.
    if (h.latest_status !== "COMPLETED") return null;
    if (r.max_occurrences !== null && h.made + 1 >= r.max_occurrences) return null;
    const next = slotAfterCompletion(r, localDay(h.latest_updated_at, r.timezone));
    if (next <= last || next > today) return null;
    if (r.end_date !== null && next > r.end_date) return null;
    return next;
  }

  /** Makes `slot`'s occurrence of a series; false when it existed already. */
  async function occur(h: Head, slot: Day): Promise<boolean> {
    const org = h.organization_id;
    const head = Number(h.number);
    if (await deps.repo.slotTaken(org, head, slot)) return false;
    try {
      await deps.tx(async (r) => {
        const current = await r.task(org, head);
        if (!current) throw new NotMade();
        const content: Content = {
          title: current.title,
          description: current.description,
          status: "TODO",
          priority: current.priority,
          start_date: null,
          due_date: slot,
          notes: current.notes,
          story_points: current.story_points === null ? null : Number(current.story_points),
          recurrence: null,
          project_ids: current.project_ids,
          parent_number: current.parent_number === null ? null : Number(current.parent_number),
        };
        const [row] = await r.createTasks(org, [
          { owner: h.owner_user_id, content, versionId: newId("ver"), eventId: newId("evt"), credentialId: null, key: null, series: { head, slot } },
        ]);
        if (!row || !(await r.recordSlot(org, head, slot, Number(row.number)))) throw new NotMade();
      });
    } catch (e) {
      if (e instanceof NotMade) return false;
      throw e;
    }
    deps.written();
    return true;
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

  return {
    /**
     * Makes every occurrence due at `now`, then rolls unfinished ones onto today's boards; answers
     * how many occurrences it made. Reads only the series whose wake-up time has come (migration
     * 0008), and puts each it is done with to sleep until the next day begins in its zone: no slot,
     * rollover or completion's next day can come sooner, and what a user changes wakes it. One
     * failing series does not stop the others; it is looked at again on the next tick.
     */
    async tick(now: Date): Promise<number> {
      let made = 0;
      const done: Array<{ org: string; number: number; seen: string; wake: Date }> = [];
      for (const h of await deps.repo.recurringHeads(now)) {
        const slot = due(h, now);
        if (slot !== null) {
          try {
            if (await occur(h, slot)) made++;
          } catch (err) {
            log.error({ err, organization_id: h.organization_id, task: `T-${h.number}`, slot }, "could not make a recurring task's occurrence");
          }
          // Its latest occurrence has just changed (here or on another replica): the next tick
          // looks at it again, for its rollover.
          continue;
        }
        const place = rollover(h, now);
        if (place !== null) {
          try {
            // Once per task and day by the boards service's own record, however often asked.
            await deps.boards.rollOver(place);
          } catch (err) {
            log.error(
              { err, organization_id: h.organization_id, task: `T-${place.task_number}`, date: place.date },
              "could not roll a recurring task's occurrence onto a board",
            );
            continue;
          }
        }
        done.push({ org: h.organization_id, number: Number(h.number), seen: h.seen, wake: nextDayStart(now, h.recurrence.timezone) });
      }
      await deps.repo.wakeAt(done);
      return made;
    },
  };
}
export type RecurrenceScheduler = ReturnType<typeof recurrenceScheduler>;
