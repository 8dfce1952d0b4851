import { createClient, type FilterField, type FilterOp, type FilterValues, type Schemas, TASK_FILTER_OPS, TasksvcError, unwrap, where } from "@tasksvc/client";
import type { FilterField as ApiField, FILTER_FIELDS } from "@tasksvc/contracts";
import { e2eContext, eventually } from "@tasksvc/testing";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";

// Finding tasks with the typed client (@tasksvc/client) against the running stack: a filter made
// by `where`, paged with `searchAll`; the GET filters through `pages`; the sync recipe; and the
// builder's table of ops per field against what the API accepts.
const { stack, f } = e2eContext();
const baseUrl = stack.gatewayUrls[0] as string;

type Task = Schemas["Task"];
type CreateTask = Schemas["CreateTaskRequest"];

/** A fetch that counts the requests of each method and path ("POST /v1/tasks/search"). */
function countingFetch() {
  const counts = new Map<string, number>();
  const fetcher = (async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const key = `${request.method} ${new URL(request.url).pathname}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return fetch(request);
  }) as typeof fetch;
  return { fetch: fetcher, count: (key: string) => counts.get(key) ?? 0 };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("@tasksvc/client finding tasks", () => {
  it("when tasks are searched with a filter made by `where`, listed with GET filters and synced by updated_at, then each finds the tasks the filters say, page after page, in order", async () => {
    // The team plan's burst allowance covers the test's many small pages.
    const t = await f.tenant("team");
    const net = countingFetch();
    const api = createClient({ baseUrl, token: t.apiKey, fetch: net.fetch });
    const specs: CreateTask[] = [
      { title: "Invoice export for March", status: "TODO", priority: "HIGH", due_date: "2026-03-10", story_points: 3 },
      { title: "Invoice export: CSV", status: "IN_PROGRESS", priority: "URGENT", due_date: "2026-03-05", description: "The export as CSV" },
      { title: "Fix the invoice export time zone", status: "TODO", priority: "LOW", due_date: "2026-03-01" },
      { title: "Quarterly report", status: "TODO", due_date: "2026-03-20", notes: "Mentions the invoice export" },
      { title: "Invoice export review", status: "COMPLETED", priority: "HIGH", due_date: "2026-03-15" },
      { title: "Unrelated chore", status: "BLOCKED", priority: "MEDIUM" },
      { title: "ÍNVOICE EXPORT of the résumés", status: "IN_PROGRESS" },
    ];
    const tasks: Task[] = [];
    // One at a time, so that the ids follow the specs.
    for (const body of specs) tasks.push(unwrap(await api.POST("/v1/tasks", { body })));
    const id = (i: number) => (tasks[i - 1] as Task).id;
    // The third task waits for the sixth, which is not done: the third is blocked.
    unwrap(await api.POST("/v1/tasks/{task_id}/dependencies", { params: { path: { task_id: id(3) } }, body: { blocker_task_id: id(6) } }));

    // Open, unblocked, about the invoice export (in title, description or notes, any case or
    // accent), latest due first and tasks without a due date last; three a page.
    const filter = where.and(where.in("status", ["TODO", "IN_PROGRESS"]), where.not(where.eq("is_blocked", true)), where.matches("invoice export"));
    const found = await collect(api.searchAll({ filter, sort: "-due_date", limit: 3 }));
    expect(found.map((x) => x.id)).toEqual([id(4), id(1), id(2), id(7)]);
    expect(net.count("POST /v1/tasks/search")).toBe(2);

    // The same body through openapi-fetch's own POST: the builder's filter is what the generated types take.
    const page = unwrap(
      await api.POST("/v1/tasks/search", { body: { filter: where.or(where.gte("story_points", 3), where.isNull("priority")), sort: "created_at", limit: 50 } }),
    );
    expect(page.data.map((x) => x.id)).toEqual([id(1), id(4), id(7)]);
    expect(page).toMatchObject({ has_more: false, next_cursor: null });

    // GET filters: statuses as a list (repeated parameter) or comma-separated, full text, sort.
    const byPriority = await collect(api.pages("/v1/tasks", { status: ["TODO", "BLOCKED"], sort: "-priority", limit: 2 }));
    expect(byPriority.map((x) => x.id)).toEqual([id(1), id(6), id(3), id(4)]);
    const noCsv = await collect(api.pages("/v1/tasks", { status: "TODO,IN_PROGRESS", q: "invoice -csv", sort: "created_at", limit: 2 }));
    expect(noCsv.map((x) => x.id)).toEqual([id(1), id(3), id(4), id(7)]);

    // The sync recipe: ascending by updated_at from the last updated_at seen. The newest changes
    // show once every write begun before them has committed, so a round is repeated until it has them.
    const firstRound = await eventually(
      async () => {
        const seen = await collect(api.pages("/v1/tasks", { sort: "updated_at", limit: 3 }));
        expect(seen).toHaveLength(tasks.length);
        return seen;
      },
      { what: "every task in the first sync round" },
    );
    const watermark = (firstRound.at(-1) as Task).updated_at;
    expect(firstRound.map((x) => x.updated_at)).toEqual(firstRound.map((x) => x.updated_at).sort());
    const renamed = unwrap(await api.PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: id(2) } }, body: { title: "Invoice export: CSV and JSON" } }));
    // updated_gte is inclusive: what was last seen comes again, then what changed since.
    const atWatermark = firstRound.filter((x) => x.updated_at === watermark).map((x) => x.id);
    const secondRound = await eventually(
      async () => {
        const seen = await collect(api.pages("/v1/tasks", { sort: "updated_at", updated_gte: watermark, limit: 3 }));
        expect(seen.map((x) => x.id)).toEqual([...atWatermark, id(2)]);
        return seen;
      },
      { what: "the renamed task in the next sync round" },
    );
    expect(secondRound.at(-1)).toEqual(renamed);
  });

  it("when a filter breaks a rule the types cannot state, then searchAll throws the API's problem with a pointer into the body", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    let thrown: unknown;
    try {
      // Full text needs at least one letter or digit.
      await collect(api.searchAll({ filter: where.and(where.eq("status", "TODO"), where.matches("--")) }));
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TasksvcError);
    const problem = (thrown as TasksvcError).problem;
    expect(problem.code, JSON.stringify(problem)).toBe("validation_failed");
    expect(problem.errors?.map((e) => e.pointer)).toEqual(["/filter/and/1/value"]);
  });

  it("when every field is tried with every op, then the API accepts exactly the ops of the builder's table", async () => {
    const t = await f.tenant("team");
    const api = createClient({ baseUrl, token: t.apiKey });
    const sample: Record<FilterField, unknown> = {
      status: "TODO",
      priority: "HIGH",
      project_id: "prj_none",
      parent_task_id: "T-1",
      owner_id: "me",
      assignee_ids: "me",
      label_ids: "lbl_none",
      archived: false,
      is_blocked: false,
      due_date: "2026-01-01",
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      story_points: 3,
      title: "x",
      text: "x",
    };
    const OPS: FilterOp[] = ["eq", "neq", "in", "nin", "lt", "lte", "gt", "gte", "is_null", "contains", "matches"];
    const taken: Schemas["TaskFilter"][] = [];
    const refused: Schemas["TaskFilter"][] = [];
    for (const field of Object.keys(sample) as FilterField[]) {
      const ops: readonly FilterOp[] = TASK_FILTER_OPS[field];
      for (const op of OPS) {
        const value = op === "is_null" ? true : op === "in" || op === "nin" ? [sample[field]] : sample[field];
        (ops.includes(op) ? taken : refused).push({ field, op, value });
      }
    }
    // In groups within the API's 50 conditions a filter.
    const groups = (xs: Schemas["TaskFilter"][]) => Array.from({ length: Math.ceil(xs.length / 40) }, (_, i) => xs.slice(i * 40, i * 40 + 40));
    for (const group of groups(taken)) {
      const r = await api.POST("/v1/tasks/search", { body: { filter: { and: group }, sort: "-updated_at", limit: 1 } });
      expect(r.response.status, JSON.stringify(r.error)).toBe(200);
    }
    for (const group of groups(refused)) {
      const r = await api.POST("/v1/tasks/search", { body: { filter: { and: group }, sort: "-updated_at", limit: 1 } });
      expect(r.response.status).toBe(400);
      expect(r.error?.errors?.map((e) => e.pointer)).toEqual(group.map((_, i) => `/filter/and/${i}/op`));
    }
  });

  it("when the builder's value types are set beside the API's filter table, then the fields are the same and no value type lets through what the table's refuses by its type", () => {
    // Checked by the type check of the tests; at run time these are no-ops.
    expectTypeOf<FilterField>().toEqualTypeOf<ApiField>();
    expectTypeOf<FilterValues>().toExtend<{ [F in ApiField]: z.input<(typeof FILTER_FIELDS)[F]["value"]> }>();
  });
});
