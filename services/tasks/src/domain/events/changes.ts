import { TASK_FIELDS, type Task, type TaskChanges, TRUNCATABLE_FIELDS } from "@tasksvc/contracts";

/** The most an event envelope may take, encoded, when its `data` leaves room (DESIGN.md section 20). */
export const EVENT_ENVELOPE_BYTES = 256 * 1024;
/**
 * Room kept for the envelope's fields around `data` and `changes` (its id, type, organization id
 * and time, and the keys and braces): a few hundred bytes at most, as ids are bounded.
 */
const ENVELOPE_FIELDS_BYTES = 1024;

/** A value's size in the envelope: its JSON in UTF-8, each escaped control character 6 bytes. */
const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? "", "utf8");

/** A free-text value's length as the API's limits count it (zod's, UTF-16 code units); null stays null. */
const lengthOf = (v: unknown): number | null => (typeof v === "string" ? v.length : null);

/**
 * What a change did to a task, for its event's `changes`: each field of the table (TASK_FIELDS, in
 * its order) whose value differs between the task before and after, as the API shows both (so
 * `from` is what a consumer last received in `data`). Fields compare by their JSON, so arrays and
 * objects (project_ids, recurrence) compare by value. Every field counts, version and updated_at
 * included: they are part of what changed.
 *
 * `after` is the event's `data`. When the envelope with every value would pass
 * EVENT_ENVELOPE_BYTES, each free-text field's entry gives lengths instead of values (all of them,
 * so that a consumer reads one rule, not a choice that depends on sizes); a consumer reads the new
 * value in `data`. When `data` alone is over the bound, the envelope is what `data` needs, still
 * far under NATS's max_payload (notes, the largest, take at most 600 KB escaped).
 */
export function changesOf(before: Task, after: Task): TaskChanges {
  const out: TaskChanges = {};
  for (const key of TASK_FIELDS) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) out[key] = { from: before[key] ?? null, to: after[key] };
  }
  if (ENVELOPE_FIELDS_BYTES + jsonBytes(after) + jsonBytes(out) <= EVENT_ENVELOPE_BYTES) return out;
  for (const key of TRUNCATABLE_FIELDS) {
    if (out[key] !== undefined) out[key] = { from_length: lengthOf(before[key]), to_length: lengthOf(after[key]), truncated: true };
  }
  return out;
}
