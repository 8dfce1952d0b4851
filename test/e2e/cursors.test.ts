import { randomBytes } from "node:crypto";
import { e2eContext, type Tenant, bodyOf, must } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { CreatedApiKey, CreatedWebhookEndpoint, type Page, Task } from "@tasksvc/contracts";

// A cursor is bound to the organization that received it and to the path of its list, besides
// its query: presented anywhere else it is 400 at /after, like a cursor reused with another
// filter. Two keys of one organization share their cursors.
const { gw, f, db } = e2eContext();

/** The first page of a list with one row per page: the cursor to the second. */
async function cursorOf(t: Tenant, path: string): Promise<string> {
  const r = await gw.get<Page<unknown>>(`${path}?limit=1`, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  expect(r.body.has_more, r.text).toBe(true);
  return encodeURIComponent(must(r.body.next_cursor, "the next page's cursor"));
}

const expectRebound = (r: { status: number; text: string; body: { code?: string; errors?: { pointer: string }[] } }) => {
  expect(r.status, r.text).toBe(400);
  expect(r.body.code).toBe("validation_failed");
  expect(r.body.errors?.map((e) => e.pointer)).toEqual(["/after"]);
};

async function task(t: Tenant, title: string): Promise<string> {
  const r = await gw.post("/v1/tasks", { title }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, Task).id;
}

/** A webhook endpoint with two delivery rows, disabled so the dispatcher leaves the rows alone. */
async function endpointWithDeliveries(t: Tenant): Promise<string> {
  const e = await gw.post("/v1/webhook-endpoints", { url: `https://hooks.example.com/cursors/${randomBytes(4).toString("hex")}` }, { token: t.apiKey });
  expect(e.status, e.text).toBe(201);
  const id = bodyOf(e, CreatedWebhookEndpoint).id;
  expect((await gw.patch(`/v1/webhook-endpoints/${id}`, { enabled: false }, { token: t.apiKey })).status).toBe(200);
  for (let i = 0; i < 2; i++) {
    const payload = { type: "task.created", timestamp: "2026-11-23T10:00:00.000Z", data: { id: "T-1" } };
    await db`
      insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at)
      values (${`whd_${randomBytes(9).toString("hex")}`}, ${t.organizationId}, ${id}, ${`evt_${randomBytes(9).toString("hex")}`},
        'task.created', ${db.json(payload)}, 'SUCCEEDED', 1, null)`;
  }
  return id;
}

describe("a cursor's owner", () => {
  it("when another organization presents an organization's /v1/tasks cursor, then 400 at /after; another key of the same organization may use it", async () => {
    const a = await f.tenant();
    const b = await f.tenant();
    await task(a, "one");
    await task(a, "two");
    await task(b, "theirs");
    await task(b, "theirs too");
    const cursor = await cursorOf(a, "/v1/tasks");
    expectRebound(await gw.get(`/v1/tasks?limit=1&after=${cursor}`, { token: b.apiKey }));
    const second = await gw.post("/v1/api-keys", { name: "a worker" }, { token: a.apiKey });
    expect(second.status, second.text).toBe(201);
    const handedOver = await gw.get(`/v1/tasks?limit=1&after=${cursor}`, { token: bodyOf(second, CreatedApiKey).key });
    expect(handedOver.status, handedOver.text).toBe(200);
    expect(handedOver.body.data.map((x: { title: string }) => x.title)).toEqual(["one"]);
  });

  it("when another organization presents an organization's /v1/events cursor, then 400 at /after", async () => {
    const a = await f.tenant();
    const b = await f.tenant();
    for (const t of [a, a, b, b]) await task(t, "an event");
    const cursor = await cursorOf(a, "/v1/events");
    expect((await gw.get(`/v1/events?limit=1&after=${cursor}`, { token: a.apiKey })).status).toBe(200);
    expectRebound(await gw.get(`/v1/events?limit=1&after=${cursor}`, { token: b.apiKey }));
  });

  it("when one task's history cursor is used on another task's history, then 400 at /after; on the same task spelled without T-, it pages on", async () => {
    const t = await f.tenant();
    const first = await task(t, "v1");
    const other = await task(t, "other v1");
    expect(first).toBe("T-1");
    for (const id of [first, other]) expect((await gw.patch(`/v1/tasks/${id}`, { title: "v2" }, { token: t.apiKey })).status).toBe(200);
    const cursor = await cursorOf(t, `/v1/tasks/${first}/history`);
    expectRebound(await gw.get(`/v1/tasks/${other}/history?limit=1&after=${cursor}`, { token: t.apiKey }));
    for (const spelling of ["1", "T-1", "T-001"]) {
      const r = await gw.get(`/v1/tasks/${spelling}/history?limit=1&after=${cursor}`, { token: t.apiKey });
      expect(r.status, `${spelling}: ${r.text}`).toBe(200);
      expect(r.body.data.map((v: { title: string }) => v.title)).toEqual(["v1"]);
    }
  });

  it("when one endpoint's deliveries cursor is used on another endpoint's deliveries, then 400 at /after", async () => {
    const t = await f.tenant();
    const one = await endpointWithDeliveries(t);
    const two = await endpointWithDeliveries(t);
    const cursor = await cursorOf(t, `/v1/webhook-endpoints/${one}/deliveries`);
    expect((await gw.get(`/v1/webhook-endpoints/${one}/deliveries?limit=1&after=${cursor}`, { token: t.apiKey })).status).toBe(200);
    expectRebound(await gw.get(`/v1/webhook-endpoints/${two}/deliveries?limit=1&after=${cursor}`, { token: t.apiKey }));
  });
});
