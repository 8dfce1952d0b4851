import { createClient, type Schemas, unwrap, where } from "@tasksvc/client";
import { type ApiResponse, e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// A due date is an instant, as every date the API takes: a date-time with an offset, or a day
// meaning 00:00 UTC that day. What a client reads it may write back unchanged (create, PATCH,
// batch items); the instant given is kept to the millisecond and shown in UTC; bounds and filter
// values compare with it exactly, never cut to a day. And a search names its filter.
const { stack, gw, f } = e2eContext();

const auth = (t: Tenant) => ({ token: t.apiKey });
type TaskJson = Schemas["Task"];
const ids = (r: ApiResponse) => (r.body.data as TaskJson[]).map((x) => x.id);
const pointers = (r: ApiResponse) => ((r.body?.errors ?? []) as { pointer: string }[]).map((e) => e.pointer);

async function create(t: Tenant, body: Record<string, unknown>): Promise<TaskJson> {
  const r = await gw.post("/v1/tasks", body, auth(t));
  expect(r.status, r.text).toBe(201);
  return r.body as TaskJson;
}

describe("a due date read and written back", () => {
  it("when a task's due_date is PATCHed back as it was read, then 200 with the same value, and nothing changes (no new version)", async () => {
    const t = await f.tenant();
    const made = await create(t, { title: "round trip", due_date: "2026-12-01" });
    const read = await gw.get(`/v1/tasks/${made.id}`, auth(t));
    expect(read.body.due_date).toBe("2026-12-01T00:00:00.000Z");
    const back = await gw.patch(`/v1/tasks/${made.id}`, { due_date: read.body.due_date }, auth(t));
    expect(back.status, back.text).toBe(200);
    expect(back.body.due_date).toBe("2026-12-01T00:00:00.000Z");
    expect(back.body.version).toBe(1);
    // The whole task as read, its writable fields sent back through the typed client, too.
    const api = createClient({ baseUrl: stack.gatewayUrls[0] as string, token: t.apiKey, retries: 0 });
    const task = unwrap(await api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: made.id } } }));
    const { title, description, status, priority, start_date, due_date, notes, story_points } = task;
    const again = unwrap(
      await api.PATCH("/v1/tasks/{task_id}", {
        params: { path: { task_id: made.id } },
        body: { title, description, status, priority, start_date, due_date, notes, story_points },
      }),
    );
    expect(again).toEqual(task);
  });

  it("when created with a date-time due_date, then the exact instant is kept, shown in UTC with milliseconds by every read", async () => {
    const t = await f.tenant();
    const made = await create(t, { title: "afternoon", due_date: "2031-05-02T17:30:15.25+02:00" });
    const want = "2031-05-02T15:30:15.250Z";
    expect(made.due_date).toBe(want);
    expect((await gw.get(`/v1/tasks/${made.id}`, auth(t))).body.due_date).toBe(want);
    const listed = await gw.get("/v1/tasks", auth(t));
    expect((listed.body.data as TaskJson[]).map((x) => x.due_date)).toEqual([want]);
    const history = await gw.get(`/v1/tasks/${made.id}/history`, auth(t));
    expect(history.body.data[0].due_date).toBe(want);
    // A day still means 00:00 UTC; a PATCH to a date-time is a change, with its event.
    const moved = await gw.patch(`/v1/tasks/${made.id}`, { due_date: "2031-05-03T09:00:00Z" }, auth(t));
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body).toMatchObject({ due_date: "2031-05-03T09:00:00.000Z", version: 2 });
    const feed = await gw.get(`/v1/events?task_id=${made.id}&type=task.updated`, auth(t));
    expect(feed.body.data[0].changes.due_date).toEqual({ from: want, to: "2031-05-03T09:00:00.000Z" });
  });

  it("when a batch creates and updates with date-time due dates, then each item keeps its instant", async () => {
    const t = await f.tenant();
    const first = await create(t, { title: "to move" });
    const r = await gw.post(
      "/v1/tasks/batch",
      {
        operations: [
          { method: "create", body: { title: "batched", due_date: "2031-05-02T08:15:00-05:00" } },
          { method: "update", task_id: first.id, body: { due_date: "2031-05-02T00:00:01Z" } },
          { method: "update", task_id: first.id, body: { due_date: "2031-05-02T00:00:01.000Z" } },
        ],
      },
      auth(t),
    );
    expect(r.status, r.text).toBe(200);
    const results = r.body.results as Array<{ status: number; body: TaskJson }>;
    expect(results.map((x) => [x.status, x.body.due_date, x.body.version])).toEqual([
      [201, "2031-05-02T13:15:00.000Z", 1],
      [200, "2031-05-02T00:00:01.000Z", 2],
      // The same instant written another way: no change.
      [200, "2031-05-02T00:00:01.000Z", 2],
    ]);
  });

  it("when a due_date has no offset or is no time, then 400 naming it", async () => {
    const t = await f.tenant();
    for (const due_date of ["2031-05-02T10:00:00", "2031-05-02 10:00:00Z", "tomorrow", "2031-02-30T10:00:00Z"]) {
      const r = await gw.post("/v1/tasks", { title: "bad", due_date }, auth(t));
      expect(r.status, `${due_date}: ${r.text}`).toBe(400);
      expect(pointers(r), due_date).toEqual(["/due_date"]);
    }
  });
});

describe("due dates compared exactly", () => {
  /** T-1 due at midnight (given as a day), T-2 a second later, T-3 at noon, T-4 without one. */
  async function fourTasks(): Promise<Tenant> {
    const t = await f.tenant();
    await create(t, { title: "midnight", due_date: "2031-05-02" });
    await create(t, { title: "a second later", due_date: "2031-05-02T00:00:01Z" });
    await create(t, { title: "noon", due_date: "2031-05-02T14:00:00+02:00" });
    await create(t, { title: "no due date" });
    return t;
  }
  const list = async (t: Tenant, query: string) => {
    const r = await gw.get(`/v1/tasks?sort=due_date&${query}`, auth(t));
    expect(r.status, `${query}: ${r.text}`).toBe(200);
    return ids(r);
  };
  const search = async (t: Tenant, filter: unknown, sort = "due_date") => {
    const r = await gw.post("/v1/tasks/search", { filter, sort }, auth(t));
    expect(r.status, `${JSON.stringify(filter)}: ${r.text}`).toBe(200);
    return ids(r);
  };
  const cond = (op: string, value: unknown) => ({ field: "due_date", op, value });

  it("when due_gte and due_lt are date-times, then a task due a second before the bound is not at or after it", async () => {
    const t = await fourTasks();
    expect(await list(t, "due_gte=2031-05-02T00:00:01Z")).toEqual(["T-2", "T-3"]);
    expect(await list(t, "due_lt=2031-05-02T00:00:01Z")).toEqual(["T-1"]);
    expect(await list(t, `due_gte=${encodeURIComponent("2031-05-02T02:00:00.999+02:00")}`)).toEqual(["T-2", "T-3"]);
    expect(await list(t, `due_lt=${encodeURIComponent("2031-05-02T14:00:00+02:00")}`)).toEqual(["T-1", "T-2"]);
    // A day is 00:00 UTC that day, as a bound too.
    expect(await list(t, "due_gte=2031-05-02")).toEqual(["T-1", "T-2", "T-3"]);
    expect(await list(t, "due_lt=2031-05-02")).toEqual([]);
    expect(await list(t, "due_gte=2031-05-02T00:00:00.001Z&due_lt=2031-05-03")).toEqual(["T-2", "T-3"]);
  });

  it("when a search condition on due_date has a date-time value, then it compares with the instant", async () => {
    const t = await fourTasks();
    expect(await search(t, cond("gte", "2031-05-02T00:00:01Z"))).toEqual(["T-2", "T-3"]);
    expect(await search(t, cond("gt", "2031-05-02T00:00:00Z"))).toEqual(["T-2", "T-3"]);
    expect(await search(t, cond("lte", "2031-05-02T00:00:00.999Z"))).toEqual(["T-1"]);
    expect(await search(t, cond("eq", "2031-05-02T12:00:00.000+00:00"))).toEqual(["T-3"]);
    expect(await search(t, cond("eq", "2031-05-02"))).toEqual(["T-1"]);
    expect(await search(t, { or: [cond("eq", "2031-05-02"), cond("eq", "2031-05-02T02:00:01+02:00")] })).toEqual(["T-1", "T-2"]);
    // Negated, a task without a due date matches: two-valued logic, as for every field.
    expect(await search(t, { not: cond("gte", "2031-05-02T00:00:01Z") })).toEqual(["T-1", "T-4"]);
    expect(await search(t, cond("neq", "2031-05-02T12:00:00Z"))).toEqual(["T-1", "T-2", "T-4"]);
    // The typed client's conditions take a date-time too.
    const api = createClient({ baseUrl: stack.gatewayUrls[0] as string, token: t.apiKey, retries: 0 });
    const found = unwrap(await api.POST("/v1/tasks/search", { body: { filter: where.lt("due_date", "2031-05-02T00:00:01Z") } }));
    expect(found.data.map((x) => x.id)).toEqual(["T-1"]);
  });

  it("when sorted by due_date and paged one at a time, then times of one day keep their order across pages", async () => {
    const t = await fourTasks();
    for (const [sort, want] of [
      ["due_date", ["T-1", "T-2", "T-3", "T-4"]],
      ["-due_date", ["T-3", "T-2", "T-1", "T-4"]],
    ] as const) {
      const seen: string[] = [];
      let after: string | undefined;
      for (let page = 0; page < 6; page++) {
        const body = { filter: { field: "archived", op: "eq", value: false }, sort, limit: 1, ...(after ? { after } : {}) };
        const r = await gw.post("/v1/tasks/search", body, auth(t));
        expect(r.status, r.text).toBe(200);
        seen.push(...ids(r));
        if (!r.body.has_more) break;
        after = r.body.next_cursor as string;
      }
      expect(seen, sort).toEqual(want);
    }
  });
});

describe("POST /v1/tasks/search without a filter", () => {
  it("when the body has no filter, then 400 validation_failed at /filter, as a problem; with one that matches every current task, 200", async () => {
    const t = await f.tenant();
    await create(t, { title: "one" });
    for (const body of [{}, { sort: "created_at", limit: 10 }]) {
      const r = await gw.post("/v1/tasks/search", body, auth(t));
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      expect(r.headers.get("content-type")).toContain("application/problem+json");
      expect(pointers(r), r.text).toEqual(["/filter"]);
    }
    const all = await gw.post("/v1/tasks/search", { filter: { field: "archived", op: "eq", value: false } }, auth(t));
    expect(all.status, all.text).toBe(200);
    expect(ids(all)).toEqual(["T-1"]);
  });
});
