import { createClient, unwrap } from "@tasksvc/client";
import type { Tenant } from "@tasksvc/testing";
import { e2eContext, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Issue 16: the events feed. Every task event of the last 30 days, newest first, as the stream
// carries it (the same ids) and as webhooks deliver it (test/e2e/webhook-delivery.test.ts holds
// the feed equal to delivered bodies).
const { gw, f, db, stack, events } = e2eContext();
const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

/** Five creates and two updates: seven events, answered in the order they happened. */
async function history(t: Tenant) {
  const mark = await events.mark();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(unwrap(await client(t).POST("/v1/tasks", { body: { title: `event ${i}` } })).id);
  for (const id of ids.slice(0, 2))
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: id } }, body: { title: `${id} changed` } }));
  return events.await(mark, t.organizationId, 7);
}

describe("GET /v1/events", () => {
  it("when an organization's tasks change, then the feed pages through every event newest first, with the stream's ids and envelopes", async () => {
    const t = await f.tenant();
    const streamed = await history(t);
    const seen = [];
    for await (const e of client(t).pages("/v1/events", { limit: 3 })) seen.push(e);
    expect(seen.map((e) => e.id)).toEqual([...streamed].reverse().map((e) => e.id));
    for (const e of seen) {
      const s = streamed.find((x) => x.id === e.id);
      expect(e).toStrictEqual({
        id: s?.id,
        type: s?.type,
        timestamp: s?.created_at,
        data: s?.data,
        ...(s?.changes === undefined ? {} : { changes: s.changes }),
      });
    }
    const times = seen.map((e) => e.timestamp);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it("when filtered by type or by a time range, then only those events come, and the range is from inclusive, to exclusive", async () => {
    const t = await f.tenant();
    const streamed = await history(t);
    const updates = unwrap(await client(t).GET("/v1/events", { params: { query: { type: "task.updated" } } }));
    expect(updates.data.map((e) => e.id).sort()).toEqual(
      streamed
        .filter((e) => e.type === "task.updated")
        .map((e) => e.id)
        .sort(),
    );

    const at = streamed[3]?.created_at ?? "";
    const from = unwrap(await client(t).GET("/v1/events", { params: { query: { created_gte: at } } }));
    expect(from.data.length).toBeGreaterThan(0);
    expect(from.data.every((e) => e.timestamp >= at)).toBe(true);
    expect(from.data.map((e) => e.id)).toContain(streamed[3]?.id);
    const before = unwrap(await client(t).GET("/v1/events", { params: { query: { created_lt: at } } }));
    expect(before.data.every((e) => e.timestamp < at)).toBe(true);
    expect(from.data.length + before.data.length).toBe(7);
    const none = unwrap(await client(t).GET("/v1/events", { params: { query: { created_gte: at, created_lt: at } } }));
    expect(none).toEqual({ data: [], has_more: false, next_cursor: null });
  });

  it("when filtered by task, then only that task's events come, newest first, whichever way the id is written; an id that names no task is 404", async () => {
    const t = await f.tenant();
    const streamed = await history(t);
    const first = streamed[0]?.data.id ?? "";
    const mine = streamed.filter((e) => e.data.id === first).map((e) => e.id);
    expect(mine).toHaveLength(2); // its create and its update
    for (const ref of [first, first.slice(2)]) {
      const got = unwrap(await client(t).GET("/v1/events", { params: { query: { task_id: ref } } }));
      expect(got.data.map((e) => e.id)).toEqual([...mine].reverse());
      expect(got.data.every((e) => e.data.id === first)).toBe(true);
    }
    const created = unwrap(await client(t).GET("/v1/events", { params: { query: { task_id: first, type: "task.created" } } }));
    expect(created.data.map((e) => e.id)).toEqual([mine[0]]);
    const unknown = await gw.get("/v1/events?task_id=T-999999", { token: t.apiKey });
    expect(unknown.status, unknown.text).toBe(404);
    const other = await f.tenant();
    expect((await gw.get(`/v1/events?task_id=${first}`, { token: other.apiKey })).status).toBe(404);
  });

  it("when an event is asked for by id, then it is the feed's item; another organization's, or an unknown id, is 404", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const [first] = await history(t);
    const one = await gw.get(`/v1/events/${first?.id}`, { token: t.apiKey });
    expect(one.status, one.text).toBe(200);
    expect(one.body).toStrictEqual({ id: first?.id, type: "task.created", timestamp: first?.created_at, data: first?.data });
    const foreign = await gw.get(`/v1/events/${first?.id}`, { token: other.apiKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe("resource_not_found");
    expect((await gw.get("/v1/events/evt_nothing_here", { token: t.apiKey })).status).toBe(404);
    expect(unwrap(await client(other).GET("/v1/events", {})).data).toEqual([]);
  });

  it("when an event is older than 30 days, then the feed no longer shows it, even before the sweep deletes it", async () => {
    const t = await f.tenant();
    const [e] = await history(t);
    const old = { ...e, id: `${e?.id}_old` };
    await db`insert into tasks.events (id, organization_id, type, created_at, payload)
      values (${old.id}, ${t.organizationId}, 'task.created', now() - interval '30 days 1 minute', ${db.json(old as never)})`;
    const young = { ...e, id: `${e?.id}_young` };
    await db`insert into tasks.events (id, organization_id, type, created_at, payload)
      values (${young.id}, ${t.organizationId}, 'task.created', now() - interval '29 days', ${db.json(young as never)})`;
    const ids = unwrap(await client(t).GET("/v1/events", { params: { query: { limit: 100 } } })).data.map((x) => x.id);
    expect(ids).toContain(young.id);
    expect(ids).not.toContain(old.id);
    expect((await gw.get(`/v1/events/${old.id}`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.get(`/v1/events/${young.id}`, { token: t.apiKey })).status).toBe(200);
  });

  it("when the query is bad, then 400 names the parameter and nothing is read", async () => {
    const t = await f.tenant();
    for (const [query, pointer] of [
      ["type=task.erased", "/type"],
      ["created_gte=yesterday", "/created_gte"],
      ["created_lt=2026-13-01T00:00:00Z", "/created_lt"],
      ["limit=0", "/limit"],
      ["kind=x", "/kind"],
      ["task_id=task", "/task_id"],
    ] as const) {
      const r = await gw.get(`/v1/events?${query}`, { token: t.apiKey });
      expect(r.status, `${query}: ${r.text}`).toBe(400);
      expect(JSON.stringify(r.body.errors ?? r.body), query).toContain(pointer);
    }
  });
});
