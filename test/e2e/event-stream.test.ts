import { createClient, unwrap } from "@tasksvc/client";
import { e2eContext, eventually, openSse, type SseStream, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The live event stream: Server-Sent Events of an organization's task events, resumable with
// Last-Event-ID, through the whole stack (real NATS JetStream and Postgres).
const { gw, f, db, stack } = e2eContext();
const base = gatewayUrl(stack);
const streamUrl = (query = "") => `${base}/v1/events/stream${query}`;
const client = (t: Tenant) => createClient({ baseUrl: base, token: t.apiKey, retries: 2 });

/** The organization's events in the live stream's order: the order the task-event stream stored them. */
async function streamOrder(org: string): Promise<string[]> {
  const rows = await db<Array<{ event_id: string }>>`
    select event_id from tasks.event_stream where organization_id = ${org} order by stream_seq`;
  return rows.map((r) => r.event_id);
}

async function feed(t: Tenant) {
  const all = [];
  for await (const e of client(t).pages("/v1/events", { limit: 100 })) all.push(e);
  return all;
}

const ids = (s: SseStream) => s.messages.map((m) => m.id);

describe("GET /v1/events/stream", () => {
  it("when the connection is cut at the 400th of 1,000 events written at a steady rate, then a reconnect with Last-Event-ID gets 401-1,000 exactly once, in order, and nothing of another organization", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    // 1,000 writes within a minute or so: more than a plan's burst allows.
    await f.admin("setLimits", { org: t.organizationId, burst: 100_000 });
    const first = await openSse(streamUrl(), { token: t.apiKey });
    expect(first.status).toBe(200);
    expect(first.headers["content-type"]).toBe("text/event-stream; charset=utf-8");

    // 500 creates, then an update of each: 1,000 events, each task's update after its create.
    // Another organization writes at the same time.
    const writes = (async () => {
      const created: string[] = [];
      // About 200 writes a second: ten at a time, a batch every 50 ms at most (the load's pace,
      // not a wait for anything).
      const paced = () => new Promise((r) => setTimeout(r, 50));
      for (let i = 0; i < 500; i += 10) {
        const [batch] = await Promise.all([
          Promise.all(Array.from({ length: 10 }, (_, k) => client(t).POST("/v1/tasks", { body: { title: `stream ${i + k}` } }))),
          paced(),
        ]);
        created.push(...batch.map((r) => unwrap(r).id));
        await client(other).POST("/v1/tasks", { body: { title: `other ${i}` } });
      }
      for (let i = 0; i < created.length; i += 10) {
        await Promise.all([
          ...created
            .slice(i, i + 10)
            .map((id) => client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: id } }, body: { status: "IN_PROGRESS" } })),
          paced(),
        ]);
      }
    })();

    const cut = await first.nth(400, 120_000);
    first.close();
    const received = ids(first).slice(0, 400);
    expect(received.at(-1)).toBe(cut.id);

    // Some events are written while no stream is open: the reconnect replays them, then goes live.
    const seen = ids(first).length;
    await eventually(async () => (await streamOrder(t.organizationId)).length >= seen + 50, {
      timeoutMs: 30_000,
      what: "events to be published while no stream is open",
    });
    const second = await openSse(streamUrl(), { token: t.apiKey, lastEventId: cut.id });
    expect(second.status).toBe(200);
    await writes;
    await second.nth(600, 120_000);
    // Nothing more comes: every event after the 400th arrived once.
    await eventually(async () => expect(await streamOrder(t.organizationId)).toHaveLength(1000), { timeoutMs: 30_000, what: "every event to be published" });
    // One more event fences the stream, which keeps the published order: whatever it would still
    // send of the first 1,000, a repeat included, it sends before this one.
    const fence = unwrap(await client(t).POST("/v1/tasks", { body: { title: "fence" } }));
    const isFence = (m: { data: string }) => m.data.includes(`"id":"${fence.id}"`);
    await eventually(() => second.messages.some(isFence), { timeoutMs: 30_000, what: "the fence event on the stream" });
    second.close();
    // The stream may send an event before its place is recorded (the relay records it after the publish).
    await eventually(async () => expect(await streamOrder(t.organizationId)).toHaveLength(1001), { timeoutMs: 30_000, what: "the fence to be recorded" });

    const all = [...received, ...ids(second)];
    expect(new Set(all).size).toBe(all.length);
    expect(all).toEqual(await streamOrder(t.organizationId));
    // Each task's events in the order they happened.
    const byTask = new Map<string, string[]>();
    for (const m of [...first.messages.slice(0, 400), ...second.messages.filter((x) => !isFence(x))]) {
      const e = JSON.parse(m.data) as { type: string; data: { id: string } };
      byTask.set(e.data.id, [...(byTask.get(e.data.id) ?? []), e.type]);
    }
    expect(byTask.size).toBe(500);
    for (const types of byTask.values()) expect(types).toEqual(["task.created", "task.updated"]);
  }, 240_000);

  it("when an event is sent, then its message is the feed's item, byte for byte, under its id and type", async () => {
    const t = await f.tenant();
    const s = await openSse(streamUrl(), { token: t.apiKey });
    const task = unwrap(await client(t).POST("/v1/tasks", { body: { title: "same bytes", priority: "HIGH" } }));
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: task.id } }, body: { title: "same bytes, changed" } }));
    await s.nth(2);
    s.close();
    const items = (await feed(t)).reverse();
    expect(s.messages.map((m) => [m.id, m.event])).toEqual(items.map((e) => [e.id, e.type]));
    for (const [i, m] of s.messages.entries()) expect(m.data).toBe(JSON.stringify(items[i]));
  });

  it("when resuming after an event published before the stream's order was recorded, then the older events follow in the feed's order, then the recorded ones", async () => {
    const t = await f.tenant();
    const task = unwrap(await client(t).POST("/v1/tasks", { body: { title: "recorded" } }));
    // A check passes unless it throws or answers false: an undefined first id (not yet published) must throw.
    const recorded = await eventually(
      async () => {
        const [first] = await streamOrder(t.organizationId);
        if (first === undefined) throw new Error("the create is not published yet");
        return first;
      },
      { what: "the create to be published" },
    );
    // Three events as an earlier version left them: in the feed, with no recorded place in the stream.
    const legacy = [3, 2, 1].map((days) => ({ id: `evt_legacy_${days}_${t.organizationId}`, days }));
    for (const l of legacy) {
      const at = new Date(Date.now() - l.days * 86_400_000).toISOString();
      const payload = { id: l.id, type: "task.updated", organization_id: t.organizationId, created_at: at, data: { ...task, title: `then ${l.days}` } };
      await db`insert into tasks.events (id, organization_id, type, created_at, payload)
        values (${l.id}, ${t.organizationId}, 'task.updated', ${at}, ${db.json(payload as never)})`;
    }
    const s = await openSse(streamUrl(`?after=${legacy[0]?.id}`), { token: t.apiKey });
    expect(s.status).toBe(200);
    await s.nth(3);
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: task.id } }, body: { title: "live" } }));
    await s.nth(4);
    s.close();
    expect(ids(s).slice(0, 3), JSON.stringify(ids(s))).toEqual([legacy[1]?.id, legacy[2]?.id, recorded]);
    expect(JSON.parse(s.messages[3]?.data ?? "{}")).toMatchObject({ type: "task.updated", data: { title: "live" } });
  });

  it("when filtered by type, then only those types come, live and replayed", async () => {
    const t = await f.tenant();
    const s = await openSse(streamUrl("?type=task.archived,task.updated"), { token: t.apiKey });
    const a = unwrap(await client(t).POST("/v1/tasks", { body: { title: "typed" } }));
    const start = unwrap(await client(t).GET("/v1/events", { params: { query: { limit: 1 } } })).data[0]?.id as string;
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: a.id } }, body: { title: "typed 2" } }));
    unwrap(await client(t).POST("/v1/tasks/{task_id}/archive", { params: { path: { task_id: a.id } } }));
    await s.nth(2);
    s.close();
    expect(s.messages.map((m) => m.event)).toEqual(["task.updated", "task.archived"]);
    const replayed = await openSse(streamUrl(`?type=task.archived&after=${start}`), { token: t.apiKey });
    await replayed.nth(1);
    replayed.close();
    expect(replayed.messages.map((m) => m.event)).toEqual(["task.archived"]);

    const bad = await openSse(streamUrl("?type=task.erased"), { token: t.apiKey });
    expect(bad.status).toBe(400);
    expect(bad.problem).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/type" }] });
  });

  it("when a credential opens a 6th stream, then 429 rate_limited, and a stream closed makes room again", async () => {
    const t = await f.tenant();
    // HEAD answers a stream's head and holds no place.
    for (let i = 0; i < 6; i++) {
      const head = await gw.request("HEAD", "/v1/events/stream", { token: t.apiKey });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    }
    const open = await Promise.all(Array.from({ length: 5 }, () => openSse(streamUrl(), { token: t.apiKey })));
    expect(open.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await openSse(streamUrl(), { token: t.apiKey });
    expect(sixth.status).toBe(429);
    expect(sixth.problem).toMatchObject({ code: "rate_limited" });
    expect(Number(sixth.headers["retry-after"])).toBeGreaterThan(0);
    // The limit is the credential's: another key of the organization opens its own.
    const member = await f.user(t.organizationId);
    const another = await openSse(streamUrl(), { token: member.apiKey });
    expect(another.status).toBe(200);
    another.close();
    open[0]?.close();
    const again = await eventually(
      async () => {
        const s = await openSse(streamUrl(), { token: t.apiKey });
        if (s.status !== 200) return false;
        return s;
      },
      { timeoutMs: 15_000, what: "a closed stream to give its place back" },
    );
    again.close();
    for (const s of open) s.close();
  });

  it("when the stream's API key is revoked, then the stream ends, told why", async () => {
    const t = await f.tenant();
    const made = await gw.post("/v1/api-keys", { name: "streamer", scopes: ["tasks:read"] }, { token: t.apiKey });
    expect(made.status).toBe(201);
    const s = await openSse(streamUrl(), { token: made.body.key });
    expect(s.status).toBe(200);
    expect((await gw.delete(`/v1/api-keys/${made.body.id}`, { token: t.apiKey })).status).toBe(200);
    await s.closed(15_000);
    expect(s.comments.join("\n")).toContain("no longer valid");
    const after = await openSse(streamUrl(), { token: made.body.key });
    expect(after.status).toBe(401);
  });

  it("when the stream's access token expires, then the stream ends, told why", async () => {
    const t = await f.tenant();
    const token = await f.token(t.organizationId, t.userId, ["tasks:read"], 3);
    const s = await openSse(streamUrl(), { token });
    expect(s.status).toBe(200);
    await s.closed(20_000);
    expect(s.comments.join("\n")).toContain("the credential has expired");
  });

  it("when Last-Event-ID or after names no event of the organization, then 400 naming it, and no stream", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    unwrap(await client(other).POST("/v1/tasks", { body: { title: "not yours" } }));
    const theirs = await eventually(async () => unwrap(await client(other).GET("/v1/events", {})).data[0]?.id);
    const byHeader = await openSse(streamUrl(), { token: t.apiKey, lastEventId: theirs as string });
    expect(byHeader.status).toBe(400);
    expect(byHeader.problem).toMatchObject({ code: "validation_failed", errors: [{ pointer: "Last-Event-ID" }] });
    const byQuery = await openSse(streamUrl("?after=evt_nothing"), { token: t.apiKey });
    expect(byQuery.status).toBe(400);
    expect(byQuery.problem).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/after" }] });
    const unauthenticated = await openSse(streamUrl(), { token: "svc_live_nope" });
    expect(unauthenticated.status).toBe(401);
  });

  it("when a stream stays idle, then a keep-alive comment comes within 15 seconds", async () => {
    const t = await f.tenant();
    const s = await openSse(streamUrl(), { token: t.apiKey });
    await eventually(() => s.comments.includes("keep-alive"), { timeoutMs: 25_000, intervalMs: 200, what: "a keep-alive comment" });
    s.close();
  }, 40_000);

  it("when the typed client iterates the stream, then it yields the events as the feed shows them", async () => {
    const t = await f.tenant();
    const api = client(t);
    const abort = new AbortController();
    const got: string[] = [];
    const reading = (async () => {
      for await (const e of api.streamEvents({ types: ["task.created"], signal: abort.signal })) {
        got.push(e.data.id);
        if (got.length === 2) break;
      }
    })();
    // The iterator connects in the background: write until it has seen two creates.
    await eventually(
      async () => {
        unwrap(await api.POST("/v1/tasks", { body: { title: "iterated" } }));
        return got.length >= 2;
      },
      { timeoutMs: 30_000, intervalMs: 300, what: "the iterator to yield two creates" },
    );
    await reading;
    abort.abort();
    expect(got).toHaveLength(2);
  });
});
