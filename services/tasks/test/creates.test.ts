import { tasksRpc, type RpcContext } from "@tasksvc/contracts";
import { client, connectNats, type NatsConnection } from "@tasksvc/nats";
import { api, factories, must, taskEvents, gatewayUrl } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

// Creates reach the tasks service concurrently and are grouped into shared transactions
// (src/domain/creates.ts). These tests go straight to the service over NATS where the gateway
// would otherwise stop the race (409 idempotency_in_progress).
const stack = inject("stack");
const f = factories(stack);
const gw = api(gatewayUrl(stack));
const db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
const events = taskEvents(stack);
let nc: NatsConnection;
let tasks: ReturnType<typeof client<typeof tasksRpc>>;

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "creates-test" });
  tasks = client(nc, tasksRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
});
afterAll(async () => {
  await nc.drain();
  await f.close();
  await events.close();
  await db.end({ timeout: 1 });
});

const ctx = (org: string, user: string, key?: string): RpcContext => ({
  request_id: `req_test_${Math.random()}`,
  organization_id: org,
  user_id: user,
  credential_id: "key_creates_test",
  scopes: ["tasks:write"],
  plan: "pro",
  ...(key === undefined ? {} : { idempotency_key: key }),
});
const count = async (org: string) => Number((await db`select count(*)::int as n from tasks.tasks where organization_id = ${org}`)[0]?.["n"]);

describe("grouped task creation", () => {
  it("when 12 executions with one idempotency key reach the service at once, then one task is created and all of them answer it", async () => {
    const t = await f.tenant();
    const mark = await events.mark();
    const results = await Promise.all(
      Array.from({ length: 12 }, () => tasks.call("createTask", { title: "once" }, ctx(t.organizationId, t.userId, "same-key"))),
    );
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    expect(results[0]?.id).toBe("T-1");
    expect(await count(t.organizationId)).toBe(1);
    // Exactly one event reaches the stream (it waits for one and for the outbox to empty, when a second would be there too).
    const got = await events.await(mark, t.organizationId, 1);
    expect(got.map((e) => `${e.type} ${e.data.id}`)).toEqual(["task.created T-1"]);
  });

  it("when 40 creates arrive together and some name an unknown project, then those get 400 and the rest are numbered without gaps", async () => {
    const t = await f.tenant("team");
    const rs = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        gw.post("/v1/tasks", i % 4 === 0 ? { title: `bad ${i}`, project_id: "prj_missing" } : { title: `good ${i}` }, { token: t.apiKey }),
      ),
    );
    const bad = rs.filter((r) => r.status === 400);
    const good = rs.filter((r) => r.status === 201);
    expect(bad).toHaveLength(10);
    expect(bad.every((r) => r.body.errors?.[0]?.pointer === "/project_id")).toBe(true);
    expect(good.map((r) => Number(r.body.id.slice(2))).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(await count(t.organizationId)).toBe(30);
  });

  it("when creates of several organizations interleave, then each organization's numbers are its own and complete", async () => {
    const orgs = await Promise.all([f.tenant("team"), f.tenant("team"), f.tenant("team")]);
    const rs = await Promise.all(
      Array.from({ length: 45 }, (_, i) => gw.post("/v1/tasks", { title: `t${i}` }, { token: must(orgs[i % 3], `organization ${i % 3}`).apiKey })),
    );
    expect(rs.every((r) => r.status === 201)).toBe(true);
    for (const [k, t] of orgs.entries()) {
      const mine = rs
        .filter((_, i) => i % 3 === k)
        .map((r) => Number(r.body.id.slice(2)))
        .sort((a, b) => a - b);
      expect(mine).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
      expect(await count(t.organizationId)).toBe(15);
    }
  });
});
