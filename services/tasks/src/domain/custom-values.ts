import type { Caller, CustomFieldValue } from "@tasksvc/contracts";
import type { StampedDefinition } from "../repo/custom-fields-repo.js";
import { fieldError } from "@tasksvc/errors";
import { inJsonbOrder } from "../repo/task-json.js";
import type { MembersPort } from "./people.js";

/** The row's version (`stamp`, xmin) lets a create's insert proceed only if the definition is still this one. */
type FieldDefinition = StampedDefinition;
export type CustomValues = Record<string, CustomFieldValue>;

/** Every value a task's custom fields hold, as JSON: one field's text may take 10,000 characters, not fifty of them. */
export const MAX_CUSTOM_FIELDS_BYTES = 32 * 1024;
const MAX_TEXT = 10_000;
const MAX_URL = 2_048;
const MAX_MULTI = 50;

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const isDay = (v: string) => DAY.test(v) && new Date(`${v}T00:00:00Z`).toISOString().slice(0, 10) === v;
// NUL and unpaired surrogates cannot be stored (the text rule of every other field).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const storable = (v: string) => !v.includes("\u0000") && !LONE_SURROGATE.test(v);

function isUrl(v: string): boolean {
  if (v.length > MAX_URL) return false;
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "";
  } catch {
    return false;
  }
}

/** Why the value does not suit the field, or null when it does. */
function refusal(def: FieldDefinition, v: CustomFieldValue): string | null {
  const options = new Set(def.options.map((o) => o.id));
  switch (def.type) {
    case "text":
      return typeof v === "string" && v.length <= MAX_TEXT && storable(v) ? null : `must be text of at most ${MAX_TEXT} characters`;
    case "number":
      return typeof v === "number" && Number.isFinite(v) ? null : "must be a finite number";
    case "date":
      return typeof v === "string" && isDay(v) ? null : "must be a date, YYYY-MM-DD";
    case "select":
      return typeof v === "string" && options.has(v) ? null : "must be the id of one of the field's options";
    case "multi_select":
      if (!Array.isArray(v) || v.length < 1 || v.length > MAX_MULTI) return `must be 1 to ${MAX_MULTI} ids of the field's options`;
      if (new Set(v).size !== v.length) return "must not repeat an option";
      return v.every((o) => options.has(o)) ? null : "must name only the field's options";
    case "user":
      return typeof v === "string" && v.length <= 100 ? null : "must be the id of a member of the organization";
    case "checkbox":
      return typeof v === "boolean" ? null : "must be true or false";
    case "url":
      return typeof v === "string" && isUrl(v) ? null : `must be an http or https URL of at most ${MAX_URL} characters`;
  }
}

/**
 * The task's values after a write: keys named are set (null clears), the others stay; each value
 * checked against its field. `members` is asked for user values only when given (outside a transaction).
 */
export async function mergedValues(
  definitions: readonly FieldDefinition[],
  before: CustomValues,
  input: Record<string, CustomFieldValue | null> | undefined,
  who?: { members: MembersPort; caller: Caller },
): Promise<CustomValues> {
  if (input === undefined) return before;
  const byKey = new Map(definitions.map((d) => [d.key, d]));
  const out: CustomValues = { ...before };
  const users: Array<[string, string]> = [];
  for (const [key, value] of Object.entries(input)) {
    const def = byKey.get(key);
    if (!def) throw fieldError(`/custom_fields/${key}`, "is not a custom field of this organization");
    if (value === null) {
      delete out[key];
      continue;
    }
    const why = refusal(def, value);
    if (why !== null) throw fieldError(`/custom_fields/${key}`, why);
    if (def.type === "user") users.push([key, value as string]);
    out[key] = value;
  }
  if (who && users.length > 0) {
    const current = await who.members.current(
      who.caller.ctx,
      who.caller.organizationId,
      users.map(([, u]) => u),
    );
    const bad = users.find(([, u]) => !current.has(u));
    if (bad) throw fieldError(`/custom_fields/${bad[0]}`, `user ${bad[1]} is not a member of this organization`);
  }
  const ordered = inJsonbOrder(out);
  const bytes = Buffer.byteLength(JSON.stringify(ordered));
  if (bytes > MAX_CUSTOM_FIELDS_BYTES)
    throw fieldError("/custom_fields", `would take ${bytes} bytes as JSON; a task's custom fields take at most ${MAX_CUSTOM_FIELDS_BYTES}`);
  return ordered;
}
