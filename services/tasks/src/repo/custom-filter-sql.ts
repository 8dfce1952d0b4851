import type { CustomCondition, CustomFieldType, FilterValue } from "@tasksvc/contracts";
import { type Fragment, jsonb, type Sql } from "@tasksvc/db";
import { removalsPending, shownCustomSql } from "./task-fields.js";

/** A custom condition the domain has checked against the field's definition (its type, `me` resolved). */
export type ResolvedCustom = CustomCondition & { type: CustomFieldType };
export const isResolvedCustom = (c: CustomCondition): c is ResolvedCustom => "type" in c;

const STORED = "custom_fields";
/** What reads show: without fields and options being removed. */
const SHOWN = shownCustomSql("");
const COMPARE = { lt: "<", lte: "<=", gt: ">", gte: ">=" } as const;

const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Containment (`@>`) is what the GIN index on custom_fields serves, so it is asked of the stored
 * column and checked again on what reads show; the other forms read the shown values. Two-valued,
 * like every condition: without a value, eq, in, lt and contains are false, and `not` is the exact negation.
 */
export function customCondition(sql: Sql, c: ResolvedCustom, negated: boolean): Fragment {
  const key = c.field.slice("custom.".length);
  const shown = sql.unsafe(SHOWN);
  const contains = (v: unknown) => {
    // The driver writes a jsonb parameter as JSON itself: given text, it would send a JSON string.
    // While no removal runs (decided once per statement), the stored containment is the whole condition.
    const doc = { [key]: v };
    return sql`(${sql.unsafe(STORED)} @> ${jsonb(sql, doc)} and (not ${sql.unsafe(removalsPending(""))} or shown_custom_fields(organization_id, custom_fields) @> ${jsonb(sql, doc)}))`;
  };
  const text = sql`(${shown} ->> ${key})`;
  const list = (v: FilterValue) => (Array.isArray(v) ? v : [v]).map(String);
  let positive: Fragment;
  switch (c.op) {
    case "is_null": {
      const none = sql`not (${shown} ? ${key})`;
      return (c.value === true) !== negated ? none : sql`not ${none}`;
    }
    case "eq":
    case "neq": {
      // An unchecked checkbox is false whether or not a value was ever set.
      const eq = c.type === "checkbox" && c.value === false ? sql`not ${contains(true)}` : contains(c.value);
      positive = c.op === "eq" ? eq : sql`not ${eq}`;
      break;
    }
    case "in":
    case "nin": {
      const any = c.type === "multi_select" ? sql`(${shown} -> ${key}) ?| ${list(c.value)}::text[]` : sql`${text} = any(${list(c.value)}::text[])`;
      positive = c.op === "in" ? sql`coalesce(${any}, false)` : sql`not coalesce(${any}, false)`;
      break;
    }
    case "contains":
      positive = c.type === "multi_select" ? contains([c.value]) : sql`coalesce(${text} ilike ${likePattern(String(c.value))}, false)`;
      break;
    case "lt":
    case "lte":
    case "gt":
    case "gte": {
      const op = sql.unsafe(COMPARE[c.op]);
      positive =
        c.type === "number"
          ? sql`coalesce(jsonb_typeof(${shown} -> ${key}) = 'number' and (${shown} -> ${key})::numeric ${op} ${Number(c.value)}::numeric, false)`
          : sql`coalesce(${text} ${op} ${String(c.value)}::text, false)`;
      break;
    }
    default:
      throw new Error(`custom field op ${c.op} reached SQL unchecked`);
  }
  return negated ? sql`not ${positive}` : positive;
}
