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
  if (out.custom_fields !== undefined) out.custom_fields = customChanges(before.custom_fields ?? {}, after.custom_fields ?? {});
  if (ENVELOPE_FIELDS_BYTES + jsonBytes(after) + jsonBytes(out) <= EVENT_ENVELOPE_BYTES) return out;
  for (const key of TRUNCATABLE_FIELDS) {
    if (out[key] !== undefined) out[key] = { from_length: lengthOf(before[key]), to_length: lengthOf(after[key]), truncated: true };
  }
  // Custom field values as JSON text: their lengths, as for the free-text fields.
  if (out.custom_fields !== undefined && "from" in out.custom_fields)
    out.custom_fields = { from_length: JSON.stringify(out.custom_fields.from).length, to_length: JSON.stringify(out.custom_fields.to).length, truncated: true };
  return out;
}

/** Only the keys that changed, each side null where the field had no value. */
function customChanges(before: Record<string, unknown>, after: Record<string, unknown>): { from: unknown; to: unknown } {
  const from: Record<string, unknown> = {};
  const to: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (JSON.stringify(before[key]) === JSON.stringify(after[key])) continue;
    from[key] = before[key] ?? null;
    to[key] = after[key] ?? null;
  }
  return { from, to };
}
