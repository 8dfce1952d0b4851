import type { TaskFilter, TaskSort } from "@tasksvc/contracts";
import { migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TASK_INDEXES } from "../src/repo/indexes.js";
import { taskSearch } from "../src/repo/task-search.js";
import { rewindsRepo } from "../src/repo/rewinds-repo.js";
import { tasksRepo } from "../src/repo/tasks-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// A connection's prepared statement goes to its generic plan after five runs when Postgres finds
// that plan no dearer, and the generic plan guesses one share for every array value. For a label
// on a fifth of the tasks that guess read every labelled task and sorted them (285-478 ms a page at
// a million tasks) instead of walking the list's order. Here every statement runs its generic plan
// from the first run (plan_cache_mode), and auto_explain, sent to this client, shows what it read.
const stack = inject("stack");
const SCHEMA = "tasks_generic_plans_test";
const log = createLogger({ service: "generic-plans-test", level: "silent" });
const TASKS = 20_000;
const org = newId("org");

type PlanNode = { "Relation Name"?: string; "Actual Rows"?: number; "Actual Loops"?: number; Plans?: PlanNode[] };
const plans: PlanNode[] = [];
const sql = postgres(stack.databaseUrl, {
  max: 1,
  connection: { search_path: SCHEMA, plan_cache_mode: "force_generic_plan", client_min_messages: "log" },
  onnotice: (n) => {
    const text = String(n["message"] ?? "");
    const at = text.indexOf("{");
    if (text.startsWith("duration:") && at >= 0) plans.push((JSON.parse(text.slice(at)) as { Plan: PlanNode }).Plan);
  },
});

/** Rows the plan's scans of the tasks table returned, over all their loops. */
function tasksRead(node: PlanNode): number {
  const own = node["Relation Name"] === "tasks" ? (node["Actual Rows"] ?? 0) * (node["Actual Loops"] ?? 1) : 0;
  return own + (node.Plans ?? []).reduce((n, p) => n + tasksRead(p), 0);
}

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log, indexes: TASK_INDEXES });
  // A fifth of the tasks carry `lbl_common`, and one in a thousand `lbl_rare`; every task has an assignee and a project.
  await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status,
      label_ids, assignee_ids, project_ids, created_at, updated_at)
    select ${org}, n, 'usr_t', 'ver_' || n, 1, 'task ' || n, 'TODO',
      case when n % 1000 = 0 then array['lbl_rare'] when n % 5 = 0 then array['lbl_common'] else '{}' end,
      array['usr_' || (n % 5)], array['prj_' || (n % 5)], now() - n * interval '1 second', now() - n * interval '1 second'
    from generate_series(1, ${TASKS}) n`;
  await sql`analyze tasks`;
  await sql`load 'auto_explain'`;
  await sql`set auto_explain.log_min_duration = 0`;
  await sql`set auto_explain.log_analyze = on`;
  await sql`set auto_explain.log_format = json`;
}, 120_000);

afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await sql.end({ timeout: 1 });
});

async function page(filter: TaskFilter, sort: TaskSort = "-created_at") {
  plans.length = 0;
  const raw = await taskSearch(sql).page(org, { filter, sort, limit: 25 });
  const body = raw.parse();
  const read = plans.reduce((n, p) => n + tasksRead(p), 0);
  return { ids: body.data.map((t) => Number(t.id.slice(2))), read, planned: plans.length };
}

describe("a list's filtered page on its generic plan", () => {
  const common = { field: "label_ids", op: "in", value: ["lbl_common"] } as const;
  it.each([
    ["a label on a fifth of the tasks (in)", common, "-created_at"],
    ["a label on a fifth of the tasks (contains)", { field: "label_ids", op: "contains", value: ["lbl_common"] }, "-created_at"],
    ["an assignee on a fifth of the tasks", { field: "assignee_ids", op: "contains", value: ["usr_0"] }, "-created_at"],
    ["a project with a fifth of the tasks", { field: "project_id", op: "eq", value: "prj_0" }, "-created_at"],
    // GET /v1/tasks?label_id=…: its lists name archived, and sort by the last change.
    ["GET's label list", { and: [{ field: "archived", op: "eq", value: false }, common] }, "-updated_at"],
  ] as [string, TaskFilter, TaskSort][])(
    "when the filter is %s, then the page walks the list's order instead of reading every match",
    async (_what, filter, sort) => {
      const got = await page(filter, sort);
      expect(got.planned).toBeGreaterThan(0);
      // The newest tasks whose number is a multiple of five.
      expect(got.ids).toEqual(Array.from({ length: 25 }, (_x, i) => 5 * (i + 1)));
      // The page's 26 matches lie within the first 130 tasks of the order; every match is 4,000.
      expect(got.read).toBeLessThan(500);
    },
  );

  it("when the filter searches text, then its statement is not prepared, so every run is planned for its words", async () => {
    const got = await page({ field: "text", op: "matches", value: "task" });
    expect(got.ids).toEqual(Array.from({ length: 25 }, (_x, i) => i + 1));
    const [row] = await sql`select count(*)::int as n from pg_prepared_statements where statement like '%websearch_to_tsquery%'
      and statement not like '%pg_prepared_statements%'`;
    expect(row?.["n"]).toBe(0);
    await page({ field: "label_ids", op: "in", value: ["lbl_common"] });
    const [labels] = await sql`select count(*)::int as n from pg_prepared_statements where statement like '%label_ids &&%'`;
    expect(labels?.["n"]).toBeGreaterThan(0);
  });

  it("when a removal looks for the tasks that carry a label, then its statement is not prepared, so each batch is planned for that label", async () => {
    const rows = await tasksRepo(sql).carrying(org, { kind: "label", ref: "lbl_common" }, 100);
    expect(rows.map((r) => Number(r.number))).toEqual(Array.from({ length: 100 }, (_x, i) => 5 * (i + 1)));
    const [row] = await sql`select count(*)::int as n from pg_prepared_statements where statement like '%skip locked%'
      and statement not like '%pg_prepared_statements%'`;
    expect(row?.["n"]).toBe(0);
  });

  it("when the label is rare, then the page still holds every match, in order", async () => {
    const got = await page({ field: "label_ids", op: "in", value: ["lbl_rare"] });
    expect(got.ids).toEqual(Array.from({ length: 20 }, (_x, i) => 1000 * (i + 1)));
  });
});

describe("tasks read in the order of their numbers", () => {
  it("when an undo reads tasks 9, 10 and 100 to lock them, then they come (and are locked) in that order, not as text", async () => {
    const rows = await rewindsRepo(sql).rows(org, [100, 10, 9], false);
    expect(rows.map((r) => Number(r.number))).toEqual([9, 10, 100]);
  });
});
