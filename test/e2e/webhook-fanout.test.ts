import { randomUUID } from "node:crypto";
import { taskEventSubject, type TaskEvent } from "@tasksvc/contracts";
import { taskEventsStream } from "@tasksvc/contracts";
import { connectNats, encodeJson, jetstream, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import type { Tenant } from "@tasksvc/testing";
import { afterAll, describe, expect, it } from "vitest";
import { e2eContext, eventually } from "@tasksvc/testing";

const { gw, f, db, stack, events } = e2eContext();
let nc: NatsConnection | undefined;
afterAll(async () => {
  await nc?.drain();
});

interface Row {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  state: string;
  /** The event's body, stored once for the event as the text every delivery of it sends. */
  body: string | null;
}
const rowsOf = (orgId: string) =>
  db<Row[]>`select d.id, d.endpoint_id, d.event_id, d.event_type, d.state, b.body
    from webhooks.deliveries d left join webhooks.event_bodies b on b.event_id = d.event_id
    where d.organization_id = ${orgId} order by d.created_at, d.endpoint_id`;

/** Polls until `ok` holds for the organization's rows, then answers them. */
async function rowsWhen(orgId: string, ok: (rows: Row[]) => boolean): Promise<Row[]> {
  return eventually(
    async () => {
      const rows = await rowsOf(orgId);
      if (!ok(rows)) throw new Error(`the rows are ${JSON.stringify(rows)}`);
      return rows;
    },
    { what: "the organization's delivery rows" },
  );
}

const endpoint = async (t: Tenant, eventTypes?: string[]) => {
  const r = await gw.post(
    "/v1/webhook-endpoints",
    { url: `https://hooks.example.com/${randomUUID()}`, ...(eventTypes ? { event_types: eventTypes } : {}) },
    { token: t.apiKey },
  );
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
};

describe("webhook fan-out from the task-event stream", () => {
  it("when a task is created and updated, then one PENDING delivery per enabled subscribed endpoint, none for a disabled one or another org", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const createdOnly = await endpoint(t, ["task.created"]);
    const all = await endpoint(t);
    const off = await endpoint(t);
    const d = await gw.patch(`/v1/webhook-endpoints/${off}`, { enabled: false }, { token: t.apiKey });
    expect(d.status, d.text).toBe(200);
    const foreign = await endpoint(other);

    const mark = await events.mark();
    const task = await gw.post("/v1/tasks", { title: "fan me out" }, { token: t.apiKey });
    expect(task.status, task.text).toBe(201);
    const [created] = await events.await(mark, t.organizationId, 1);
    expect(created?.type).toBe("task.created");

    // One statement writes every row of an event: once any is there, all are.
    const rows = await rowsWhen(t.organizationId, (r) => r.length > 0);
    expect(rows.map((r) => r.endpoint_id).sort(), JSON.stringify(rows)).toEqual([createdOnly, all].sort());
    for (const r of rows) {
      // PENDING, or already DELIVERING: a delivery worker may have taken it up the moment it was written.
      expect(r).toMatchObject({ id: expect.stringMatching(/^whd_/), event_id: created?.id, event_type: "task.created" });
      expect(["PENDING", "DELIVERING"]).toContain(r.state);
      expect(JSON.parse(r.body ?? "null")).toEqual({ type: "task.created", timestamp: created?.created_at, data: task.body });
    }

    const upd = await gw.patch(`/v1/tasks/${task.body.id}`, { title: "changed" }, { token: t.apiKey });
    expect(upd.status, upd.text).toBe(200);
    const after = await rowsWhen(t.organizationId, (r) => r.some((x) => x.event_type === "task.updated"));
    const updated = after.filter((r) => r.event_type === "task.updated");
    expect(
      updated.map((r) => r.endpoint_id),
      JSON.stringify(after),
    ).toEqual([all]);
    expect(after).toHaveLength(3);
    expect(after.some((r) => r.endpoint_id === off)).toBe(false);
    expect(await db`select 1 from webhooks.deliveries where endpoint_id = ${foreign}`).toHaveLength(0);
  });

  it("when a recurring task is created and changed, then each event's stored body is its feed item without the id, byte for byte, nested fields too", async () => {
    const t = await f.tenant();
    await endpoint(t);
    const recurrence = { frequency: "WEEKLY", interval: 2, by_weekday: [1, 3], timezone: "Europe/Berlin" };
    const task = await gw.post("/v1/tasks", { title: "repeat me", notes: "ünïcode ✓", recurrence }, { token: t.apiKey });
    expect(task.status, task.text).toBe(201);
    const upd = await gw.patch(`/v1/tasks/${task.body.id}`, { title: "repeated", notes: null }, { token: t.apiKey });
    expect(upd.status, upd.text).toBe(200);
    const rows = await rowsWhen(t.organizationId, (r) => r.filter((x) => x.body !== null).length >= 2);
    // The feed's text, item by item: JSON.parse keeps key order, so stringifying an item gives its bytes back.
    const feed = await gw.get("/v1/events?limit=10", { token: t.apiKey });
    expect(feed.status, feed.text).toBe(200);
    const items = (JSON.parse(feed.text) as { data: Array<{ id: string }> }).data;
    for (const r of rows) {
      const item = items.find((i) => i.id === r.event_id);
      expect(`{"id":${JSON.stringify(r.event_id)},${r.body?.slice(1)}`, r.event_type).toBe(JSON.stringify(item));
    }
    expect(rows.map((r) => r.event_type)).toEqual(expect.arrayContaining(["task.created", "task.updated"]));
  });

  it("when an event comes again under another message id, then no second row; an endpoint created after it gets none", async () => {
    const t = await f.tenant();
    const ep = await endpoint(t);
    const mark = await events.mark();
    expect((await gw.post("/v1/tasks", { title: "once" }, { token: t.apiKey })).status).toBe(201);
    const [event] = await events.await(mark, t.organizationId, 1);
    if (!event) throw new Error("no task.created event");
    await rowsWhen(t.organizationId, (r) => r.length > 0);
    const late = await endpoint(t);

    // The same event published again (a producer's retry outside the duplicate window, or a
    // redelivery), handled after `late` exists; then a fresh event, which `late` does get.
    nc ??= await connectNats({ url: stack.natsUrl, name: "fanout-test" });
    const js = jetstream(nc);
    const subject = taskEventSubject(stack.namespace, "task.created");
    const again = await js.publish(subject, encodeJson(event), { msgID: `again_${randomUUID()}` });
    const marker: TaskEvent = { ...event, id: `evt_marker_${randomUUID()}`, created_at: new Date(Date.now() + 1000).toISOString() };
    await js.publish(subject, encodeJson(marker), { msgID: marker.id });

    // The consumer acks after the insert: an ack floor at or past the duplicate means it was handled.
    const jsm = await jetstreamManager(nc);
    await eventually(
      async () =>
        expect((await jsm.consumers.info(taskEventsStream(stack.namespace), `${stack.namespace}_webhooks_fanout`)).ack_floor.stream_seq).toBeGreaterThanOrEqual(
          again.seq,
        ),
      { what: "the fan-out consumer's ack floor to pass the duplicate" },
    );
    const rows = await rowsWhen(t.organizationId, (r) => r.some((x) => x.event_id === marker.id));
    const ofEvent = rows.filter((r) => r.event_id === event.id);
    expect(
      ofEvent.map((r) => r.endpoint_id),
      JSON.stringify(rows),
    ).toEqual([ep]);
    expect(
      rows
        .filter((r) => r.event_id === marker.id)
        .map((r) => r.endpoint_id)
        .sort(),
    ).toEqual([ep, late].sort());
  });
});
