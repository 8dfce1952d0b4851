import { TASK_FIELDS, type Task, type TaskChanges, TRUNCATABLE_FIELDS } from "@tasksvc/contracts";

export const EVENT_ENVELOPE_BYTES = 256 * 1024;
/** The envelope's fields around `data` and `changes`: a few hundred bytes at most, as ids are bounded. */
const ENVELOPE_FIELDS_BYTES = 1024;

const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? "", "utf8");

/** As the API's limits count it (zod's, UTF-16 code units). */
const lengthOf = (v: unknown): number | null => (typeof v === "string" ? v.length : null);

/**
 * Fields compare by their JSON, version and updated_at included. When the envelope with every
 * value would pass EVENT_ENVELOPE_BYTES, every free-text entry gives lengths instead (all of them,
 * so a consumer reads one rule, not a choice that depends on sizes; decision 0031).
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
