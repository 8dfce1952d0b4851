import { describe, expect, expectTypeOf, it } from "vitest";
import { type components, type FilterField, type FilterValues, TASK_FILTER_OPS, type TaskCondition, type TaskFilter, where } from "../src/index.js";

// The filter builder: the JSON it writes, and (at compile time) the conditions it refuses.

describe("where", () => {
  it("when conditions are built, then each is the plain {field, op, value} the API takes", () => {
    expect(where.eq("status", "TODO")).toEqual({ field: "status", op: "eq", value: "TODO" });
    expect(where.neq("priority", "LOW")).toEqual({ field: "priority", op: "neq", value: "LOW" });
    expect(where.eq("is_blocked", true)).toEqual({ field: "is_blocked", op: "eq", value: true });
    expect(where.neq("archived", false)).toEqual({ field: "archived", op: "neq", value: false });
    expect(where.lt("due_date", "2026-11-30")).toEqual({ field: "due_date", op: "lt", value: "2026-11-30" });
    expect(where.gte("due_date", "2026-11-30T17:00:00Z")).toEqual({ field: "due_date", op: "gte", value: "2026-11-30T17:00:00Z" });
    expect(where.lte("story_points", 3)).toEqual({ field: "story_points", op: "lte", value: 3 });
    expect(where.gt("created_at", "2026-01-01T00:00:00Z")).toEqual({ field: "created_at", op: "gt", value: "2026-01-01T00:00:00Z" });
    expect(where.gte("updated_at", "2026-01-01T00:00:00.123+02:00")).toEqual({ field: "updated_at", op: "gte", value: "2026-01-01T00:00:00.123+02:00" });
    expect(where.contains("title", "Invoice")).toEqual({ field: "title", op: "contains", value: "Invoice" });
    expect(where.matches('"invoice export" -draft')).toEqual({ field: "text", op: "matches", value: '"invoice export" -draft' });
    expect(where.eq("project_id", "prj_1")).toEqual({ field: "project_id", op: "eq", value: "prj_1" });
    expect(where.eq("parent_task_id", "T-7")).toEqual({ field: "parent_task_id", op: "eq", value: "T-7" });
    expect(where.contains("assignee_ids", "me")).toEqual({ field: "assignee_ids", op: "contains", value: "me" });
    expect(where.in("assignee_ids", ["me", "usr_1"])).toEqual({ field: "assignee_ids", op: "in", value: ["me", "usr_1"] });
    expect(where.isNull("assignee_ids")).toEqual({ field: "assignee_ids", op: "is_null", value: true });
    expect(where.neq("owner_id", "me")).toEqual({ field: "owner_id", op: "neq", value: "me" });
  });

  it("when in, nin or isNull is built, then in and nin carry a copy of the list, and isNull a boolean (true unless told)", () => {
    const statuses = ["TODO", "IN_PROGRESS"] as const;
    const built = where.in("status", statuses);
    expect(built).toEqual({ field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] });
    expect(built.value).not.toBe(statuses);
    expect(where.nin("story_points", [1, 2, 3])).toEqual({ field: "story_points", op: "nin", value: [1, 2, 3] });
    expect(where.isNull("priority")).toEqual({ field: "priority", op: "is_null", value: true });
    expect(where.isNull("due_date", false)).toEqual({ field: "due_date", op: "is_null", value: false });
  });

  it("when filters are combined, then and/or/not nest them as they are, in order, and the result survives JSON", () => {
    const filter = where.and(
      where.in("status", ["TODO", "IN_PROGRESS"]),
      where.not(where.eq("is_blocked", true)),
      where.or(where.eq("priority", "URGENT"), where.matches("invoice export")),
    );
    expect(filter).toEqual({
      and: [
        { field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] },
        { not: { field: "is_blocked", op: "eq", value: true } },
        {
          or: [
            { field: "priority", op: "eq", value: "URGENT" },
            { field: "text", op: "matches", value: "invoice export" },
          ],
        },
      ],
    });
    expect(JSON.parse(JSON.stringify(filter))).toEqual(filter);
    expect(where.and(where.eq("status", "TODO"))).toEqual({ and: [{ field: "status", op: "eq", value: "TODO" }] });
  });

  it("when the table of ops per field is read, then it names every field of the generated schema once", () => {
    const fields: FilterField[] = [
      "status",
      "priority",
      "project_id",
      "parent_task_id",
      "owner_id",
      "assignee_ids",
      "label_ids",
      "archived",
      "is_blocked",
      "due_date",
      "created_at",
      "updated_at",
      "story_points",
      "title",
      "text",
    ];
    expect(Object.keys(TASK_FILTER_OPS).sort()).toEqual([...fields].sort());
  });
});

type SchemaFilter = components["schemas"]["TaskFilter"];
type SchemaField = Extract<SchemaFilter, { field: unknown }>["field"];

// Compile-time checks, run by the type check of the tests (`tsc -p tsconfig.test.json`, part of
// `make test`). Never called.
export function filtersTheApiTakes(): void {
  // What the builder makes is a filter of the generated schema, so it goes in a search body as it is.
  expectTypeOf<TaskFilter>().toExtend<SchemaFilter>();
  expectTypeOf<TaskCondition>().toExtend<SchemaFilter>();
  expectTypeOf(where.and(where.eq("status", "TODO"), where.matches("x"))).toExtend<SchemaFilter>();
  // The schema's field is a string (the fixed fields and custom.<key>); every fixed field has a value type, and no other.
  expectTypeOf<keyof FilterValues>().toEqualTypeOf<FilterField>();
  expectTypeOf<FilterField>().toExtend<SchemaField>();
  expectTypeOf(where.custom("estimate", "gte", 3)).toExtend<SchemaFilter>();
  expectTypeOf(where.in("status", ["TODO"])).toEqualTypeOf<{ field: "status"; op: "in"; value: FilterValues["status"][] }>();
  expectTypeOf(where.isNull("story_points")).toEqualTypeOf<{ field: "story_points"; op: "is_null"; value: boolean }>();
}

export function filtersTheApiRefuses(): void {
  // @ts-expect-error status takes eq, neq, in and nin: it has no order
  where.lt("status", "TODO");
  // @ts-expect-error story_points is a number
  where.eq("story_points", "3");
  // @ts-expect-error not a status
  where.eq("status", "DONE");
  // @ts-expect-error not a priority
  where.in("priority", ["HIGH", "CRITICAL"]);
  // @ts-expect-error a due date is a date-time or a day, YYYY-MM-DD
  where.lt("due_date", "tomorrow");
  // @ts-expect-error a due date is written as a string, not a Date
  where.lt("due_date", new Date());
  // @ts-expect-error created_at takes no eq (a bound: lt, lte, gt, gte)
  where.eq("created_at", "2026-01-01T00:00:00Z");
  // @ts-expect-error archived is a boolean
  where.eq("archived", "true");
  // @ts-expect-error is_blocked has no is_null (every task is blocked or not)
  where.isNull("is_blocked");
  // @ts-expect-error assignee_ids is a list: contains, in or is_null, never eq
  where.eq("assignee_ids", "me");
  // @ts-expect-error every task has an owner
  where.isNull("owner_id");
  // @ts-expect-error title takes eq, neq and contains
  where.in("title", ["a"]);
  // @ts-expect-error only the title takes contains
  where.contains("project_id", "prj_");
  // @ts-expect-error text is searched with matches only
  where.eq("text", "invoice");
  // @ts-expect-error in takes a list
  where.in("status", "TODO");
  // @ts-expect-error an and of nothing is refused by the API
  where.and();
  // @ts-expect-error an or of nothing is refused by the API
  where.or();
  // @ts-expect-error no such field
  where.eq("assignee", "u_1");
  // @ts-expect-error a condition written by hand is checked too: status takes no gt
  const byHand: TaskFilter = { field: "status", op: "gt", value: "TODO" };
  // @ts-expect-error and the value of a condition written by hand
  const wrongValue: TaskFilter = { and: [{ field: "priority", op: "eq", value: 3 }] };
  void [byHand, wrongValue];
}
