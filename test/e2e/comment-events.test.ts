import { randomUUID } from "node:crypto";
import { type CommentEvent, isCommentEventType, isEndpointEvent, type TaskEvent } from "@tasksvc/contracts";
import { e2eContext, eventually, gatewayUrl, openSse, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Comment events in the feed, the live stream and webhook fan-out, and the actor every event
// message of the tasks service carries beside its organization (never in a body).
const { gw, f, db, events, stack } = e2eContext();

type Caller = Pick<Tenant, "apiKey">;
const newTask = async (t: Caller) => {
  const r = await gw.post("/v1/tasks", { title: "discussed" }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
};
const commented = async (t: Caller, task: string, body: string) => {
  const r = await gw.post(`/v1/tasks/${task}/comments`, { body }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body;
};
const feed = async (t: Caller, query: string) => {
  const r = await gw.get(`/v1/events?limit=100&${query}`, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.data as Array<{ id: string; type: string; data: Record<string, unknown> }>).reverse();
};

describe("comment events", () => {
  it("when a comment is created, edited and deleted, then the feed has comment.created and comment.updated with the comment and comment.deleted with its id and task, and no actor or organization in any body", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const task = await newTask(t);
    const created = await commented(t, task, `Over to <@${ann.userId}>`);
    const edited = await gw.patch(`/v1/tasks/${task}/comments/${created.id}`, { body: "Over to me" }, { token: t.apiKey });
    expect(edited.status, edited.text).toBe(200);
    const deleted = await gw.delete(`/v1/tasks/${task}/comments/${created.id}`, { token: t.apiKey });
    expect(deleted.status, deleted.text).toBe(200);

    const items = await eventually(
      async () => {
        const all = (await feed(t, "")).filter((e) => isCommentEventType(e.type));
        if (all.length < 3) throw new Error(`only ${all.length} comment events so far`);
        return all;
      },
      { what: "the comment events in the feed" },
    );
    expect(items.map((e) => [e.type, e.data])).toEqual([
      ["comment.created", created],
      ["comment.updated", edited.body],
      ["comment.deleted", { id: created.id, task_id: task }],
    ]);
    for (const e of items) {
      expect(Object.keys(e)).toEqual(["id", "type", "timestamp", "data"]);
      expect(JSON.stringify(e)).not.toMatch(/actor_id|organization_id/);
    }
    // The type filter and a single event answer the same bodies.
    expect(await feed(t, "type=comment.updated")).toEqual([items[1]]);
    const one = await gw.get(`/v1/events/${items[2]?.id}`, { token: t.apiKey });
    expect(one.body, one.text).toEqual(items[2]);
    // Comments change no task: the task's own events are its create alone.
    expect((await feed(t, `task_id=${task}`)).map((e) => e.type)).toEqual(["task.created"]);
  });

  it("when the tasks service publishes an event, then its message carries the acting user as actor_id beside organization_id, and the events table keeps it", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const mark = await events.mark();
    const task = await newTask(t);
    const patched = await gw.patch(`/v1/tasks/${task}`, { title: "discussed more" }, { token: ann.apiKey });
    expect(patched.status, patched.text).toBe(200);
    const c = await commented(ann, task, "noted");
    const mine = await eventually(
      async () => {
        const all = (await events.allSince(mark)).filter((e): e is TaskEvent | CommentEvent => e.organization_id === t.organizationId && !isEndpointEvent(e));
        if (all.length < 3) throw new Error(`only ${all.length} events so far`);
        return all;
      },
      { what: "the organization's messages" },
    );
    expect(mine.map((e) => [e.type, e.actor_id])).toEqual([
      ["task.created", t.userId],
      ["task.updated", ann.userId],
      ["comment.created", ann.userId],
    ]);
    expect(Object.keys(mine[2] ?? {})).toEqual(["id", "type", "organization_id", "actor_id", "created_at", "data"]);
    expect(mine[2]?.data).toEqual(c);
    const rows = await db<Array<{ id: string; actor_id: string | null }>>`
      select id, actor_id from tasks.events where organization_id = ${t.organizationId} order by created_at, id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.actor_id]))).toEqual(Object.fromEntries(mine.map((e) => [e.id, e.actor_id])));
  });

  it("when the service changes a task on its own (a deleted label taken off it), then the message's actor_id is null, never the user who deleted the label", async () => {
    const t = await f.tenant();
    const label = await gw.post("/v1/labels", { name: "going away" }, { token: t.apiKey, headers: { "idempotency-key": randomUUID() } });
    expect(label.status, label.text).toBe(201);
    const made = await gw.post("/v1/tasks", { title: "labelled", label_ids: [label.body.id] }, { token: t.apiKey });
    expect(made.status, made.text).toBe(201);
    const mark = await events.mark();
    expect((await gw.delete(`/v1/labels/${label.body.id}`, { token: t.apiKey })).status).toBe(200);
    const [removed] = await eventually(
      async () => {
        const all = (await events.allSince(mark)).filter((e): e is TaskEvent => e.organization_id === t.organizationId && e.type === "task.updated");
        return all.length === 1 ? all : false;
      },
      { what: "the removal's task.updated message", timeoutMs: 30_000 },
    );
    expect(removed?.data.label_ids).toEqual([]);
    expect(removed && "actor_id" in removed).toBe(true);
    expect(removed?.actor_id).toBeNull();
    const [row] = await db<Array<{ actor_id: string | null }>>`select actor_id from tasks.events where id = ${removed?.id ?? ""}`;
    expect(row).toEqual({ actor_id: null });
  });

  it("when a comment is written, then the live stream sends its event as the feed has it", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const s = await openSse(`${gatewayUrl(stack)}/v1/events/stream?type=comment.created`, { token: t.apiKey });
    expect(s.status).toBe(200);
    await commented(t, task, "live");
    const m = await s.nth(1);
    s.close();
    const [item] = await feed(t, "type=comment.created");
    expect([m.id, m.event]).toEqual([item?.id, "comment.created"]);
    expect(m.data).toBe(JSON.stringify(item));
  });

  it("when a credential with tasks:read only asks for comment events, then the feed and the stream give them (they need no webhooks:read)", async () => {
    const t = await f.tenant();
    const token = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    const task = await newTask(t);
    const s = await openSse(`${gatewayUrl(stack)}/v1/events/stream?type=comment.created,comment.deleted`, { token });
    expect(s.status).toBe(200);
    const c = await commented(t, task, "read only");
    expect((await gw.delete(`/v1/tasks/${task}/comments/${c.id}`, { token: t.apiKey })).status).toBe(200);
    await s.nth(2);
    s.close();
    expect(s.messages.map((m) => m.event)).toEqual(["comment.created", "comment.deleted"]);
    const r = await gw.get("/v1/events?type=comment.deleted", { token });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.map((e: { data: unknown }) => e.data)).toEqual([{ id: c.id, task_id: task }]);
  });

  it("when endpoints subscribe, then one with an empty event_types gets no comment event and one naming comment.created gets it", async () => {
    const t = await f.tenant();
    const endpoint = async (event_types?: string[]) => {
      const body = { url: `https://hooks.example.com/${randomUUID()}`, ...(event_types ? { event_types } : {}) };
      const r = await gw.post("/v1/webhook-endpoints", body, { token: t.apiKey });
      expect(r.status, r.text).toBe(201);
      return r.body.id as string;
    };
    const everyTask = await endpoint();
    const comments = await endpoint(["comment.created"]);
    const task = await newTask(t);
    const c = await commented(t, task, "hooked");
    const rows = await eventually(
      async () => {
        const rows = await db<Array<{ endpoint_id: string; event_type: string; body: string | null }>>`
          select d.endpoint_id, d.event_type, b.body from webhooks.deliveries d
          left join webhooks.event_bodies b on b.event_id = d.event_id
          where d.organization_id = ${t.organizationId} order by d.created_at, d.endpoint_id`;
        // Each event's deliveries are written in one statement: once both events have some, none is missing.
        const types = new Set(rows.map((r) => r.event_type));
        if (!types.has("comment.created") || !types.has("task.created")) throw new Error(`the deliveries are ${JSON.stringify(rows)}`);
        return rows;
      },
      { what: "the comment's delivery" },
    );
    expect(rows.map((r) => [r.endpoint_id, r.event_type]).sort()).toEqual(
      [
        [everyTask, "task.created"],
        [comments, "comment.created"],
      ].sort(),
    );
    const delivered = JSON.parse(rows.find((r) => r.event_type === "comment.created")?.body ?? "{}");
    expect(delivered).toEqual({ type: "comment.created", timestamp: expect.any(String), data: c });
  });
});
