import { Task, page } from "@tasksvc/contracts";
import { e2eContext, bodyOf, must } from "@tasksvc/testing";
import { TASK_INDEXES } from "@tasksvc/tasks";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";

// A write stamps updated_at with its transaction's start and may commit after a later write: a
// reader paging sort=updated_at that had read the later one would have passed the earlier one for
// good. Here a transaction of the tasks service (its application_name) changes T-1 and stays open
// while T-2 changes through the API: T-2 must not be listed before T-1's write has committed.

const { gw, f, stack, db } = e2eContext();
// A connection that looks like one of the tasks service's own to pg_stat_activity.
const writer = postgres(stack.databaseUrl, {
  max: 1,
  onnotice: () => {},
  connection: { application_name: "tasksvc-tasks-horizon-test", search_path: "tasks" },
});
afterAll(() => writer.end({ timeout: 1 }));

const ids = (r: { body: { data?: Task[] } }) => (r.body.data ?? []).map((t) => t.id);

describe("the sync horizon of sort=updated_at", () => {
  it("when a write that began earlier commits after a later one, then the later one is listed only once the earlier has committed, so a reader misses neither", async () => {
    const t = await f.tenant();
    for (const title of ["held back", "changed meanwhile"]) expect((await gw.post("/v1/tasks", { title }, { token: t.apiKey })).status).toBe(201);
    const before = await gw.get("/v1/tasks?sort=updated_at", { token: t.apiKey });
    expect(ids(before)).toEqual(["T-1", "T-2"]);
    const since = must(bodyOf(before, page(Task)).data[1], "the second task").updated_at;

    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let stamped: () => void = () => {};
    const wrote = new Promise<void>((resolve) => {
      stamped = resolve;
    });
    const held = writer.begin(async (tx) => {
      await tx`update tasks set title = 'held back, renamed', updated_at = now() where organization_id = ${t.organizationId} and number = 1`;
      stamped();
      await released;
    });
    await wrote;
    expect((await gw.patch("/v1/tasks/T-2", { title: "changed meanwhile, renamed" }, { token: t.apiKey })).status).toBe(200);

    // T-2's change is newer than T-1's open one: not listed yet, while the other list orders see it.
    const during = await gw.get(`/v1/tasks?sort=updated_at&updated_gte=${encodeURIComponent(since)}`, { token: t.apiKey });
    expect(during.status, during.text).toBe(200);
    expect(ids(during)).toEqual([]);
    expect(ids(await gw.get("/v1/tasks", { token: t.apiKey }))).toContain("T-2");

    release();
    await held;
    const after = await gw.get(`/v1/tasks?sort=updated_at&updated_gte=${encodeURIComponent(since)}`, { token: t.apiKey });
    expect(ids(after)).toEqual(["T-1", "T-2"]);
    expect(bodyOf(after, page(Task)).data.map((x) => x.title)).toEqual(["held back, renamed", "changed meanwhile, renamed"]);
  });
});

describe("the search indexes", () => {
  it("when the stack has started, then every index of the task list's filters and sorts exists in the tasks schema and is valid", async () => {
    const rows = await db<{ name: string }[]>`
      select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'tasks' and i.indisvalid`;
    const built = new Set(rows.map((r) => r.name));
    expect(TASK_INDEXES.map((ix) => ix.name).filter((name) => !built.has(name))).toEqual([]);
  });
});
