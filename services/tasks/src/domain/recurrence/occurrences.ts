import { newId } from "@tasksvc/db";
import type { Repositories } from "../../repo/repositories.js";
import { type Content, contentOf, type TaskRow, toIsoOrNull } from "../../repo/task-json.js";
import { ReferenceVanished } from "../../repo/task-create.js";
import { type Day, firstSlot, localDay, slotAtDone } from "./slots.js";

/**
 * Making a recurring task's occurrences (decision 0021), shared by the scheduler's ticks and by the
 * writes that complete or archive a series' latest occurrence, so both make them the same way.
 */

/**
 * Thrown inside an occurrence's transaction to undo it: its slot was recorded meanwhile (another
 * replica, a retried tick, a concurrent completion), a later slot of its series was, or its head
 * is gone.
 */
export class NotMade extends Error {}

/** The occurrence of `slot` for the series headed by task `head`, decided when its latest slot was `after` (null: the head). */
export interface Occurrence {
  head: number;
  slot: Day;
  after: Day | null;
}

/**
 * An occurrence's content: the head's, status TODO, due at 00:00 UTC of its slot (what a day means
 * as a due date), with no recurrence of its own.
 */
const contentFor = (head: TaskRow, slot: Day): Content => ({
  ...contentOf(head),
  status: "TODO",
  start_date: null,
  due_date: toIsoOrNull(slot),
  recurrence: null,
});

/**
 * Makes occurrences of one organization's series with `r`, bound to a transaction the caller
 * owns: one read of the heads, one statement for the tasks (numbered in a row, versioned,
 * `task.created` through the outbox, like group-committed creates), one for their slot records.
 * Throws NotMade when a slot was recorded meanwhile, a later slot of its series was, or a head is
 * gone, and ReferenceVanished when a head's project or parent went: the caller must then undo
 * the transaction (or savepoint), numbers included.
 */
export async function makeOccurrences(r: Repositories, org: string, list: Occurrence[]): Promise<void> {
  const heads = new Map(
    (
      await r.tasks.byNumber(
        org,
        list.map((o) => o.head),
      )
    ).map((t) => [t.number, t]),
  );
  const items = list.map(({ head, slot }) => {
    const current = heads.get(String(head));
    if (!current) throw new NotMade();
    return {
      owner: current.owner_user_id,
      content: contentFor(current, slot),
      versionId: newId("ver"),
      eventId: newId("evt"),
      credentialId: null,
      key: null,
      series: { head, slot },
    };
  });
  const rows = await r.tasks.create(org, items);
  const after = new Map(list.map((o) => [o.head, o.after]));
  const slots = rows.map((row) => ({
    head: Number(row.series_head),
    slot: String(row.series_slot),
    task: Number(row.number),
    after: after.get(Number(row.series_head)) ?? null,
  }));
  if ((await r.recurrence.recordSlots(org, slots)) !== list.length) throw new NotMade();
}

/**
 * After a write completed or archived `done` (its row as written, in the write's transaction):
 * when it is its series' latest occurrence (the head while none was made after it), makes the
 * next one in that same transaction, so the write's answer already implies it and no crash can
 * lose it. Answers whether one was made. Nothing for a task of no series, an archived head (that
 * ends the series), an occurrence that is not the latest (the next was made already), a paused
 * or ended series, or a slot made meanwhile by the scheduler or a concurrent write (the (series,
 * slot) key decides; the write goes on, undone is only the occurrence, in a savepoint). `now` is
 * the time of the write; its day in the series' zone is the day it was done.
 */
export async function occurAfterDone(r: Repositories, org: string, done: TaskRow, now: Date): Promise<boolean> {
  const headNumber = Number(done.series_head ?? done.number);
  const head = done.series_head === null ? done : await r.tasks.get(org, headNumber);
  if (!head || head.archived || head.recurrence === null) return false;
  const rec = head.recurrence;
  const { last_slot, made } = await r.recurrence.seriesSlots(org, headNumber);
  if (done.series_head === null ? last_slot !== null : done.series_slot !== last_slot) return false;
  const begun = localDay(head.created_at, rec.timezone);
  const last = last_slot ?? firstSlot(rec, begun);
  if (last === null) return false;
  const slot = slotAtDone(rec, begun, last, made, localDay(now, rec.timezone));
  if (slot === null) return false;
  try {
    await r.savepoint(() => makeOccurrences(r, org, [{ head: headNumber, slot, after: last_slot }]));
    return true;
  } catch (e) {
    // Made meanwhile, or the head's project or parent went: the scheduler's tick decides (and
    // logs) what is left. The user's write stands.
    if (e instanceof NotMade || e instanceof ReferenceVanished) return false;
    throw e;
  }
}
