import { randomUUID } from "node:crypto";
import { Task } from "@tasksvc/contracts";
import { api, factories, startReceiver, startStack, type Receiver, type StartedStack, type Tenant } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The probes (test event, verify) reaching a real receiver on 127.0.0.1 that checks every request
// with `standardwebhooks`, the reference verifier. Its own stack: the shared one refuses http and
// private targets (those refusals are in webhook-operations.test.ts).
const SETTINGS = { WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_TIMEOUT_MS: "2000", WEBHOOK_LEASE: "4s" };

let stack: StartedStack;
let rx: Receiver;
let db: postgres.Sql;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  stack = await startStack({ env: SETTINGS, replicas: { gateway: 1, keys: 1, tasks: 1, boards: 1 } });
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  f = factories(stack);
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await f?.close();
  await db?.end({ timeout: 1 });
  await stack?.stop();
});

const gw = () => api(stack.gatewayUrls[0] as string);

/** An endpoint at a fresh path of the receiver, which verifies with its secret. */
async function hook(t: Tenant): Promise<{ id: string; secret: string; path: string }> {
  const path = `/${randomUUID()}`;
  const r = await gw().post("/v1/webhook-endpoints", { url: rx.url(path) }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  rx.expect(path, [r.body.secret]);
  return { id: r.body.id, secret: r.body.secret, path };
}

const deliveryCount = async (endpointId: string) => (await db`select count(*)::int as n from webhooks.deliveries where endpoint_id = ${endpointId}`)[0]?.["n"];

describe("probes to a receiver", () => {
  it("when a test event is sent, then the receiver gets one signed sample Task, the answer is delivered with its status, and no delivery row exists", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, () => ({ status: 204 }));
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/test-event`, { event_type: "task.updated" }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ outcome: "delivered", status: 204, duration_ms: expect.any(Number) });
    const [got] = rx.received(h.path);
    expect(got?.verifiedBy, JSON.stringify(got)).toEqual([0]);
    expect(got?.id).toMatch(/^evt_/);
    expect(got?.event.type).toBe("task.updated");
    const parsed = Task.safeParse(got?.event.data);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(rx.received(h.path)).toHaveLength(1);
    expect(await deliveryCount(h.id)).toBe(0);
    const log = await gw().get(`/v1/webhook-endpoints/${h.id}/deliveries`, { token: t.apiKey });
    expect(log.body.data, log.text).toEqual([]);
  });

  it("when verify gets a 500, then verified stays false; when it then gets a 2xx, then the endpoint is verified", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, (n) => ({ status: n === 1 ? 500 : 200 }));
    const path = `/v1/webhook-endpoints/${h.id}/verify`;
    const failed = await gw().post(path, undefined, { token: t.apiKey });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.body).toMatchObject({ status: 500, verified: false });
    expect(failed.body.outcome).not.toBe("delivered");
    expect((await gw().get(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey })).body.verified).toBe(false);
    const ok = await gw().post(path, undefined, { token: t.apiKey });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ outcome: "delivered", status: 200, duration_ms: expect.any(Number), verified: true });
    expect((await gw().get(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey })).body.verified).toBe(true);
    const [probe] = rx.received(h.path);
    expect(probe?.verifiedBy).toEqual([0]);
    expect(probe?.event).toMatchObject({ type: "webhook.verify", data: { endpoint_id: h.id } });
    expect(await deliveryCount(h.id)).toBe(0);
  });

  it("when the secret was rotated, then a probe carries two signatures, one per secret, each verifying alone", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const rotated = await gw().post(`/v1/webhook-endpoints/${h.id}/rotate-secret`, undefined, { token: t.apiKey });
    expect(rotated.status, rotated.text).toBe(200);
    rx.expect(h.path, [rotated.body.secret, h.secret]);
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/test-event`, undefined, { token: t.apiKey });
    expect(r.body.outcome, r.text).toBe("delivered");
    const [got] = rx.received(h.path);
    expect(got?.signature.split(" ")).toHaveLength(2);
    expect(got?.verifiedBy, JSON.stringify(got)).toEqual([0, 1]);
    expect(got?.event.type).toBe("task.created");
  });
});
