import { newId } from "@tasksvc/db";
import type { Repositories } from "../../repo/repositories.js";
import { type Content, contentOf, type TaskRow, toIsoOrNull } from "../../repo/task-json.js";
import { ReferenceVanished } from "../../repo/task-create.js";
import { SERVICE_STAMP } from "../stamps.js";
import { type Day, firstSlot, localDay, slotAtDone } from "./slots.js";

// Shared by the scheduler's ticks and the writes that complete or archive a series' latest occurrence, so both make them alike.

/** Undoes the occurrence's transaction: its slot, or a later one of its series, was recorded meanwhile, or its head is gone. */
export class NotMade extends Error {}

export interface Occurrence {
  head: number;
  slot: Day;
  after: Day | null;
}

/** Due at 00:00 UTC of its slot, what a day means as a due date. */
const contentFor = (head: TaskRow, slot: Day): Content => ({
  ...contentOf(head),
  status: "TODO",
  start_date: null,
  due_date: toIsoOrNull(slot),
  recurrence: null,
});

/** The caller owns the transaction and must undo it (numbers included) on NotMade or ReferenceVanished. */
export async function makeOccurrences(r: Repositories, org: string, list: Occurrence[]): Promise<void> {
  const numbers = list.map((o) => o.head);
  // The definitions first, then the heads as reads show them: a field or option removed after the
  // definitions were read changes their row version, and the create then writes nothing.
  // Heads without values (most) are read once.
  const first = await r.tasks.byNumber(org, numbers);
  const keys = [...new Set(first.flatMap((t) => Object.keys(t.custom_fields)))];
  const fieldsSeen = (keys.length === 0 ? [] : await r.customFields.definitions(org, keys, false)).map((d) => ({ id: d.id, stamp: d.stamp }));
  const heads = new Map((keys.length === 0 ? first : await r.tasks.byNumber(org, numbers)).map((t) => [t.number, t]));
  const items = list.map(({ head, slot }) => {
    const current = heads.get(String(head));
    if (!current) throw new NotMade();
    return {
      owner: current.owner_user_id,
      content: contentFor(current, slot),
      versionId: newId("ver"),
      eventId: newId("evt"),
      credentialId: null,
      // Made by the service (a tick, or the write that completed the series' latest one): nobody acted.
      actor: null,
      by: SERVICE_STAMP,
      key: null,
      series: { head, slot },
      fieldsSeen,
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
 * Makes the next occurrence in the write's own transaction, so the write's answer already implies
 * it and no crash can lose it. A slot made meanwhile undoes only the occurrence (a savepoint): the
 * write goes on (decision 0021).
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
    // The scheduler's tick decides (and logs) what is left; the user's write stands.
    if (e instanceof NotMade || e instanceof ReferenceVanished) return false;
    throw e;
  }
}
