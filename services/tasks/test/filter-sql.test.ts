import { FILTER_FIELDS, type FilterField, type FilterValue, type TaskCondition } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";
import { compileFilter, type FilterSql } from "../src/repo/task-filter-sql.js";

// The SQL side of the filter's table: every field the contracts' table names has SQL, of a shape
// that compiles every op the field takes (checked by the type, and here by Postgres itself).
const stack = inject("stack");
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {}, connection: { search_path: "tasks" } });
afterAll(async () => {
  await sql.end({ timeout: 1 });
});

/** One value of each field; a field added to the table without one does not compile. */
const SAMPLE: Record<FilterField, FilterValue> = {
  status: "TODO",
  priority: "HIGH",
  project_id: "prj_1",
  parent_task_id: "T-1",
  owner_id: "usr_1",
  assignee_ids: "usr_2",
  label_ids: "lbl_1",
  archived: false,
  is_blocked: true,
  due_date: "2026-11-22",
  created_at: "2026-11-22T09:00:00.000001Z",
  updated_at: "2026-11-22T10:00:00+01:00",
  story_points: 3,
  title: "50%_off",
  text: '"invoice export" -draft',
};

describe("the filter's SQL", () => {
  it("when every op of every field of the table is compiled, plain and negated, then Postgres runs each statement", async () => {
    const org = newId("org");
    for (const field of Object.keys(FILTER_FIELDS) as FilterField[]) {
      for (const op of FILTER_FIELDS[field].ops) {
        const value = op === "is_null" ? true : op === "in" || op === "nin" ? [SAMPLE[field] as string | number] : SAMPLE[field];
        const condition = { field, op, value } as TaskCondition;
        for (const negated of [false, true]) {
          const [row] = await sql<
            { n: number }[]
          >`select count(*)::int as n from tasks where organization_id = ${org} and ${compileFilter(sql, condition, negated)}`;
          expect(row, `${field} ${op}${negated ? " negated" : ""}`).toEqual({ n: 0 });
        }
      }
    }
  });
});

// Compile-time checks, run by the type check of the tests. Never called.
export function sqlTheTypeRefuses(table: FilterSql): void {
  const accept = (t: FilterSql) => t;
  const { title: _title, ...withoutTitle } = table;
  // @ts-expect-error a field of the filter's table without SQL
  accept(withoutTitle);
  // @ts-expect-error status takes in and nin: the blocker's SQL compiles eq and neq only
  accept({ ...table, status: { kind: "blocked" } });
  // @ts-expect-error title takes contains: a column without `like` cannot compile it
  accept({ ...table, title: { kind: "column", col: "title", cast: "::text", nullable: false } });
  // @ts-expect-error text takes matches: only the full text compiles it
  accept({ ...table, text: { kind: "column", col: "title", cast: "::text", nullable: false, like: true } });
  // @ts-expect-error project_id takes is_null and in: a blocker's SQL cannot compile them
  accept({ ...table, project_id: { kind: "blocked" } });
}
