import { type Page, Project, Task, type TaskEvent } from "@tasksvc/contracts";
import { e2eContext, eventually, type Tenant, bodyOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// `changes` on task.updated and task.archived: each field of the task that changed, from and to,
// computed in the writing transaction, and the same object in the events feed, on the stream and
// in the webhook body.

const { gw, f, events, db } = e2eContext();

const auth = (t: Tenant) => ({ token: t.apiKey });
interface FeedEvent {
  id: string;
  type: string;
  data: Task;
  changes?: Record<string, { from: unknown; to: unknown }>;
}
const feed = async (t: Tenant, id: string): Promise<FeedEvent[]> => (await gw.get<Page<FeedEvent>>(`/v1/events?task_id=${id}&limit=100`, auth(t))).body.data;

describe("changes on task events", () => {
  it("when a task's fields of every kind change, then its events say each change from and to, and the feed, the stream and the webhook body carry the same object", async () => {
    const t = await f.tenant();
    // An endpoint, so that every event is also a delivery whose body we can read.
    const hook = await gw.post("/v1/webhook-endpoints", { url: `https://hooks.example.com/changes/${t.organizationId}` }, auth(t));
    expect(hook.status, hook.text).toBe(201);
    const p1 = bodyOf(await gw.post("/v1/projects", { name: "One" }, auth(t)), Project).id;
    const p2 = bodyOf(await gw.post("/v1/projects", { name: "Two" }, auth(t)), Project).id;
    const created = bodyOf(await gw.post("/v1/tasks", { title: "Before", priority: "LOW", story_points: 2, project_ids: [p1] }, auth(t)), Task);
    const blocker = bodyOf(await gw.post("/v1/tasks", { title: "Blocker" }, auth(t)), Task);
    const mark = await events.mark();

    const patched = bodyOf(
      await gw.patch(
        `/v1/tasks/${created.id}`,
        {
          title: "After",
          description: "Now described",
          status: "IN_PROGRESS",
          priority: null,
          due_date: "2026-12-24",
          story_points: 5.5,
          project_ids: [p1, p2],
        },
        auth(t),
      ),
      Task,
    );
    expect((await gw.post(`/v1/tasks/${created.id}/dependencies`, { blocker_task_id: blocker.id }, auth(t))).status).toBe(201);
    const archived = bodyOf(await gw.post(`/v1/tasks/${created.id}/archive`, undefined, auth(t)), Task);
    expect((await gw.delete(`/v1/projects/${p2}`, auth(t))).status).toBe(200);

    const fed = (await feed(t, created.id)).reverse();
    expect(fed.map((e) => e.type)).toEqual(["task.created", "task.updated", "task.updated", "task.archived", "task.updated"]);
    expect(fed[0]?.changes).toBeUndefined();
    expect(fed[1]?.changes).toEqual({
      version: { from: 1, to: 2 },
      title: { from: "Before", to: "After" },
      description: { from: null, to: "Now described" },
      status: { from: "TODO", to: "IN_PROGRESS" },
      priority: { from: "LOW", to: null },
      due_date: { from: null, to: "2026-12-24T00:00:00.000Z" },
      story_points: { from: 2, to: 5.5 },
      project_ids: { from: [p1], to: [p1, p2] },
      updated_at: { from: created.updated_at, to: patched.updated_at },
    });
    // The dependency is not a field of the task: nothing it shows changed.
    expect(fed[2]?.changes).toEqual({});
    expect(fed[3]?.changes).toEqual({ version: { from: 2, to: 3 }, archived: { from: false, to: true } });
    expect(fed[4]?.changes).toEqual({ version: { from: 3, to: 4 }, project_ids: { from: [p1, p2], to: [p1] } });
    expect(archived.version).toBe(3);

    // The stream: the same events, the same changes.
    const streamed = await eventually(
      async () => {
        // Task ids are numbers per organization: other files' organizations have a T-1 too.
        const xs = (await events.since(mark)).filter((e: TaskEvent) => e.organization_id === t.organizationId && e.data.id === created.id);
        return xs.length === 4 ? xs : false;
      },
      { what: "the task's four events on the stream", timeoutMs: 40_000 },
    );
    expect((streamed ?? []).map((e) => ({ id: e.id, changes: e.changes }))).toEqual(fed.slice(1).map((e) => ({ id: e.id, changes: e.changes })));

    // The webhook bodies: each delivery's event's stored body is the body sent, beside `data`.
    const bodies = await eventually(
      async () => {
        const rows = (
          await db<{ event_id: string; body: string }[]>`
            select d.event_id, b.body from webhooks.deliveries d join webhooks.event_bodies b on b.event_id = d.event_id
            where d.organization_id = ${t.organizationId}`
        ).map((r) => ({ event_id: r.event_id, payload: JSON.parse(r.body) as { changes?: unknown; data: { id: string } } }));
        const mine = rows.filter((r) => r.payload.data.id === created.id);
        return mine.length === 5 ? mine : false;
      },
      { what: "the task's five deliveries", timeoutMs: 40_000 },
    );
    for (const e of fed) expect((bodies ?? []).find((b) => b.event_id === e.id)?.payload.changes, e.type).toEqual(e.changes);
    // Past its two waits of 20 s each, so that a slow stream or fan-out is named by the wait, not by the test's timeout.
  }, 100_000);
});
