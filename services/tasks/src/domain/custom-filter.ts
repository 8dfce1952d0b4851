import {
  type Caller,
  type CustomCondition,
  type CustomFieldType,
  type FilterOp,
  isCustomCondition,
  isCustomSort,
  ME,
  type TaskFilter,
  type TaskSort,
} from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import type { ResolvedCustom } from "../repo/custom-filter-sql.js";
import type { Repositories } from "../repo/repositories.js";
import type { CustomSortType } from "../repo/task-search.js";

const OPS: Record<CustomFieldType, readonly FilterOp[]> = {
  text: ["eq", "neq", "contains", "is_null"],
  number: ["eq", "neq", "lt", "lte", "gt", "gte", "is_null"],
  date: ["eq", "neq", "lt", "lte", "gt", "gte", "is_null"],
  select: ["eq", "neq", "in", "nin", "is_null"],
  multi_select: ["contains", "in", "is_null"],
  user: ["eq", "in", "is_null"],
  checkbox: ["eq"],
  url: ["eq", "is_null"],
};
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const SCALAR: Record<CustomFieldType, { ok: (v: unknown) => boolean; says: string }> = {
  text: { ok: (v) => typeof v === "string", says: "text" },
  number: { ok: (v) => typeof v === "number" && Number.isFinite(v), says: "a number" },
  date: { ok: (v) => typeof v === "string" && DAY.test(v), says: "a date, YYYY-MM-DD" },
  select: { ok: (v) => typeof v === "string", says: "an option id" },
  multi_select: { ok: (v) => typeof v === "string", says: "an option id" },
  user: { ok: (v) => typeof v === "string", says: "a user id or `me`" },
  checkbox: { ok: (v) => typeof v === "boolean", says: "true or false" },
  url: { ok: (v) => typeof v === "string", says: "a URL" },
};

const keyOf = (field: string) => field.slice("custom.".length);

function customKeys(f: TaskFilter, into: Set<string>): Set<string> {
  if ("and" in f) for (const c of f.and) customKeys(c, into);
  else if ("or" in f) for (const c of f.or) customKeys(c, into);
  else if ("not" in f) customKeys(f.not, into);
  else if (isCustomCondition(f)) into.add(keyOf(f.field));
  return into;
}

/**
 * Each `custom.<key>` condition checked against the organization's field of that key (400 at its
 * pointer), `me` made the caller; and the sort's custom field, which must hold numbers or dates.
 */
export async function resolveCustom(
  r: Repositories,
  c: Caller,
  filter: TaskFilter | undefined,
  sort: TaskSort,
  at: { filter: string; sort: string },
): Promise<{ filter: TaskFilter | undefined; sortType: CustomSortType | undefined }> {
  const keys = filter === undefined ? new Set<string>() : customKeys(filter, new Set());
  if (isCustomSort(sort)) keys.add(keyOf(sort.replace(/^-/, "")));
  if (keys.size === 0) return { filter, sortType: undefined };
  const types = new Map((await r.customFields.definitions(c.organizationId, [...keys], false)).map((d) => [d.key, d.type]));
  let sortType: CustomSortType | undefined;
  if (isCustomSort(sort)) {
    const type = types.get(keyOf(sort.replace(/^-/, "")));
    if (type !== "number" && type !== "date") throw fieldError(at.sort, "custom fields sort only by a number or date field of this organization");
    sortType = type;
  }
  const walk = (f: TaskFilter, path: string): TaskFilter => {
    if ("and" in f) return { and: f.and.map((x, i) => walk(x, `${path}/and/${i}`)) };
    if ("or" in f) return { or: f.or.map((x, i) => walk(x, `${path}/or/${i}`)) };
    if ("not" in f) return { not: walk(f.not, `${path}/not`) };
    return isCustomCondition(f) ? checked(f, path) : f;
  };
  const checked = (cond: CustomCondition, path: string): ResolvedCustom => {
    const type = types.get(keyOf(cond.field));
    if (type === undefined) throw fieldError(`${path}/field`, "is not a custom field of this organization");
    if (!OPS[type].includes(cond.op)) throw fieldError(`${path}/op`, `must be one of ${OPS[type].join(", ")} for a ${type} field`);
    const me = (v: unknown) => (type === "user" && v === ME ? c.userId : v);
    if (cond.op === "is_null") {
      if (typeof cond.value !== "boolean") throw fieldError(`${path}/value`, "must be true or false");
      return { ...cond, type };
    }
    const values = Array.isArray(cond.value) ? cond.value : [cond.value];
    const bad = values.findIndex((v) => !SCALAR[type].ok(v));
    if (bad >= 0) throw fieldError(Array.isArray(cond.value) ? `${path}/value/${bad}` : `${path}/value`, `must be ${SCALAR[type].says}`);
    const value = Array.isArray(cond.value) ? cond.value.map((v) => me(v) as string) : (me(cond.value) as string | number | boolean);
    return { ...cond, value, type };
  };
  return { filter: filter === undefined ? undefined : walk(filter, at.filter), sortType };
}
