import type { Caller, RpcContext, Task } from "@tasksvc/contracts";
import { actorOf, CreateTaskBody as CreateTaskBodySchema, page as pageOf, Task as TaskSchema } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventsSystem } from "../src/domain/events/system.js";
import { projectsSystem } from "../src/domain/projects.js";
import { tasksResources } from "../src/domain/resources.js";
import { tasksSystem } from "../src/domain/tasks.js";
import { inTaskOrder, toTask } from "../src/repo/task-json.js";
import { edgeBodies } from "./edge-bodies.js";

// Lists send each task as JSON that Postgres builds (TASK_JSON), while every other read and each
// write's answer and event build it in TypeScript (toTask). Two renderings of one shape: this
// holds them byte for byte equal (JSON.stringify(toTask(row)) is a substring of the raw page, and
// the page is compact), over every field and the edge values each has.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 2 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

const resources = tasksResources(db);
const repo = resources.repos.tasks;
/** The task list as GET /v1/tasks reads it (archived or current, newest change first). */
const list = (org: string, q: { limit: number; archived: boolean; after?: string | undefined }) =>
  resources.repos.search.page(org, { filter: { field: "archived", op: "eq", value: q.archived }, sort: "-updated_at", limit: q.limit, after: q.after });
const svc = tasksSystem(resources);
const projects = projectsSystem(resources);
const events = eventsSystem(resources);

const text = (raw: { bytes: Uint8Array }) => Buffer.from(raw.bytes).toString("utf8");

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
  return { organizationId: org, userId: "usr_task_json", credentialId: "key_task_json", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
}

describe("a task as a list renders it (Postgres) and as toTask() renders it", () => {
  it("when tasks hold every field, empty or full, then the listed JSON equals toTask() of the same row", async () => {
    const c = caller();
    const project = await projects.createProject(c, { name: "p" });
    const other = await projects.createProject(c, { name: "q" });
    const parent = await svc.createTask(c, { title: "parent" });
    const bodies = edgeBodies(project.id, other.id, parent.id);
    const created: Task[] = [];
    for (const b of bodies) created.push(await svc.createTask(c, b));
    // Microseconds that milliseconds must cut the same way on both sides (truncation, not rounding).
    await db.sql`update tasks set start_date = '2026-05-05 10:00:00.123999+00', due_date = '2026-05-06 10:00:00.123999+00' where organization_id = ${c.organizationId} and number = ${Number(created[0]?.id.slice(2))}`;
    await svc.setArchived(c, created[2]?.id ?? "", true);
    // An occurrence's link to its series (the scheduler writes it; set here on a task of the list).
    await db.sql`update tasks set series_head = ${Number(parent.id.slice(2))}, series_slot = '2024-02-29'
      where organization_id = ${c.organizationId} and number = ${Number(created[3]?.id.slice(2))}`;

    for (const archived of [false, true]) {
      const raw = await list(c.organizationId, { limit: 100, archived });
      const page = raw.parse();
      expect(pageOf(TaskSchema).safeParse(page).success).toBe(true);
      expect(page.data.length).toBeGreaterThan(0);
      expect(text(raw)).toBe(JSON.stringify(page));
      for (const listed of page.data) {
        const row = await repo.get(c.organizationId, Number(listed.id.slice(2)));
        expect(row).toBeDefined();
        if (row) {
          expect(listed).toStrictEqual(toTask(row));
          expect(text(raw)).toContain(JSON.stringify(toTask(row)));
        }
      }
    }
    const all = [...(await list(c.organizationId, { limit: 100, archived: false })).parse().data];
    expect(all.find((t) => t.title === "bare")?.start_date).toBe("2026-05-05T10:00:00.123Z");
    expect(all.find((t) => t.title === "points")).toBeUndefined();
    expect(all.find((t) => t.title === "one project")).toMatchObject({ series_task_id: parent.id, occurrence_date: "2024-02-29" });
    expect(all.find((t) => t.title === "bare")).toMatchObject({ series_task_id: null, occurrence_date: null });
  });

  it("when a task comes back from jsonb (an event, a replay), then it is in toTask()'s order, byte for byte the answer", async () => {
    const c = { ...caller(), idempotencyKey: "task-json-replay" };
    const body = CreateTaskBodySchema.parse({ title: "replayed", notes: "n", story_points: 2, recurrence: { frequency: "DAILY" } });
    const created = await svc.createTask(c, body);
    const replayed = await svc.createTask(c, body);
    expect(JSON.stringify(replayed)).toBe(JSON.stringify(created));
    const patch = { ...c, idempotencyKey: "task-json-patch" };
    const patched = await svc.updateTask(patch, created.id, { title: "patched" });
    expect(JSON.stringify(await svc.updateTask(patch, created.id, { title: "patched" }))).toBe(JSON.stringify(patched));
    const row = await repo.get(c.organizationId, Number(created.id.slice(2)));
    expect(row && JSON.stringify(toTask(row))).toBe(JSON.stringify(patched));

    const feed = await events.listEvents(c, { limit: 10, task_id: created.id });
    expect(feed.data.map((e) => e.type)).toEqual(["task.updated", "task.created"]);
    expect(feed.data.map((e) => JSON.stringify(e.data))).toEqual([JSON.stringify(patched), JSON.stringify(created)]);
    const one = await events.getEvent(c, feed.data[0]?.id ?? "");
    expect(Object.keys(one).filter((k) => k !== "changes")).toEqual(["id", "type", "timestamp", "data"]);
    expect(JSON.stringify(one.data)).toBe(JSON.stringify(patched));

    // A field the task lacks stays absent (an event from before it); one toTask() lacks comes last.
    const { series_task_id: _s, ...older } = created;
    expect(Object.keys(inTaskOrder({ extra: 1, ...older } as unknown as Task))).toEqual([...Object.keys(older), "extra"]);
  });

  it("when a list has more than a page, then the raw page's has_more and next_cursor lead to the rest, each task once", async () => {
    const c = caller();
    for (let i = 0; i < 7; i++) await svc.createTask(c, { title: `t${i}` });
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = (await list(c.organizationId, { limit: 3, archived: false, after })).parse();
      seen.push(...page.data.map((t) => t.title));
      expect(page.has_more).toBe(page.next_cursor !== null);
      if (!page.next_cursor) break;
      after = page.next_cursor;
    }
    expect(seen.sort()).toEqual(["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
  });
});
