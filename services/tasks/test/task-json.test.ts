import type { Caller, CreateTaskBody, RpcContext, Task } from "@tasksvc/contracts";
import { CreateTaskBody as CreateTaskBodySchema, page as pageOf, Task as TaskSchema } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { taskCache } from "../src/domain/task-cache.js";
import { tasksService } from "../src/domain/tasks-service.js";
import { tasksRepo, toTask } from "../src/repo/tasks-repo.js";

// Lists send each task as JSON that Postgres builds (TASK_JSON), while every other read and each
// write's answer and event build it in TypeScript (toTask). Two renderings of one shape: this
// holds them byte-for-byte equal after parsing, over every field and the edge values each has.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 2 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

const repo = tasksRepo(db.sql);
const svc = tasksService({
  repo,
  tx: (fn) => db.tx((t) => fn(tasksRepo(t))),
  written: () => undefined,
  cache: taskCache(),
  checkHits: () => false,
  changed: async () => undefined,
});

function caller(): Caller {
  const org = newId("org");
  const ctx: RpcContext = {
    request_id: "req_task_json",
    organization_id: org,
    user_id: "usr_task_json",
    credential_id: "key_task_json",
    scopes: ["tasks:read", "tasks:write"],
    plan: "pro",
  };
  return { organizationId: org, userId: "usr_task_json", credentialId: "key_task_json", idempotencyKey: undefined, ctx };
}

describe("a task as a list renders it (Postgres) and as toTask() renders it", () => {
  it("when tasks hold every field, empty or full, then the listed JSON equals toTask() of the same row", async () => {
    const c = caller();
    const project = await svc.createProject(c, { name: "p" });
    const other = await svc.createProject(c, { name: "q" });
    const parent = await svc.createTask(c, { title: "parent" });
    const bodies: CreateTaskBody[] = [
      { title: "bare" },
      {
        title: 'Quotes " \\ and 🚀 ünïcode',
        description: "d",
        status: "IN_PROGRESS",
        priority: "HIGH",
        start_date: "2026-03-29T01:30:00.5+02:00",
        due_date: "2026-12-31",
        notes: "line one\nline two \u2028 \t tab </script>",
        story_points: 0.5,
        project_ids: [project.id, other.id],
        parent_task_id: parent.id,
        recurrence: { frequency: "WEEKLY", interval: 2, by_weekday: [1, 3], timezone: "Europe/Berlin" },
      },
      { title: "points", story_points: 13, priority: "LOW", status: "COMPLETED", due_date: "2024-02-29" },
      { title: "one project", project_id: project.id, start_date: "1999-12-31T23:59:59.999Z" },
    ].map((b) => CreateTaskBodySchema.parse(b));
    const created: Task[] = [];
    for (const b of bodies) created.push(await svc.createTask(c, b));
    // Microseconds that milliseconds must cut the same way on both sides (truncation, not rounding).
    await db.sql`update tasks set start_date = '2026-05-05 10:00:00.123999+00' where organization_id = ${c.organizationId} and number = ${Number(created[0]?.id.slice(2))}`;
    await svc.setArchived(c, created[2]?.id ?? "", true);
    // An occurrence's link to its series (the scheduler writes it; set here on a task of the list).
    await db.sql`update tasks set series_head = ${Number(parent.id.slice(2))}, series_slot = '2024-02-29'
      where organization_id = ${c.organizationId} and number = ${Number(created[3]?.id.slice(2))}`;

    for (const archived of [false, true]) {
      const page = (await repo.listTasks(c.organizationId, { limit: 100, archived })).parse();
      expect(pageOf(TaskSchema).safeParse(page).success).toBe(true);
      expect(page.data.length).toBeGreaterThan(0);
      for (const listed of page.data) {
        const row = await repo.task(c.organizationId, Number(listed.id.slice(2)));
        expect(row).toBeDefined();
        if (row) expect(listed).toStrictEqual(toTask(row));
      }
    }
    const all = [...(await repo.listTasks(c.organizationId, { limit: 100, archived: false })).parse().data];
    expect(all.find((t) => t.title === "bare")?.start_date).toBe("2026-05-05T10:00:00.123Z");
    expect(all.find((t) => t.title === "points")).toBeUndefined();
    expect(all.find((t) => t.title === "one project")).toMatchObject({ series_task_id: parent.id, occurrence_date: "2024-02-29" });
    expect(all.find((t) => t.title === "bare")).toMatchObject({ series_task_id: null, occurrence_date: null });
  });

  it("when a list has more than a page, then the raw page's has_more and next_cursor lead to the rest, each task once", async () => {
    const c = caller();
    for (let i = 0; i < 7; i++) await svc.createTask(c, { title: `t${i}` });
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = (await repo.listTasks(c.organizationId, { limit: 3, archived: false, after })).parse();
      seen.push(...page.data.map((t) => t.title));
      expect(page.has_more).toBe(page.next_cursor !== null);
      if (!page.next_cursor) break;
      after = page.next_cursor;
    }
    expect(seen.sort()).toEqual(["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
  });
});
