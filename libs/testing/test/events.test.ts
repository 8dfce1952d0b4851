import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { api, e2eContext, eventually, gatewayUrl } from "../src/index.js";

const { f, stack, events } = e2eContext();
const gw = api(gatewayUrl(stack));
// A session of its own that can hold the tasks service's relay lock, as another relay would.
const holder = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
afterAll(() => holder.end({ timeout: 1 }));
const RELAY_LOCK = "tasks.outbox.relay";

describe("taskEvents().await()", () => {
  it("when an event of the change is still in the outbox after the awaited count arrived, then it waits for it and answers it too", async () => {
    const t = await f.tenant();
    const mark = await events.mark();
    const first = await gw.post("/v1/tasks", { title: "first" }, { token: t.apiKey });
    expect(first.status, first.text).toBe(201);
    await eventually(async () => (await events.since(mark)).some((e) => e.organization_id === t.organizationId), { what: "the first event" });

    // The relay is held up, so the second event waits in the outbox longer than
    // the 700 ms pause this helper once took for "long enough".
    await holder`select pg_advisory_lock(hashtextextended(${RELAY_LOCK}, 0))`;
    try {
      const second = await gw.post("/v1/tasks", { title: "second" }, { token: t.apiKey });
      expect(second.status, second.text).toBe(201);
      // The hold's length, not a wait for anything: the relay resumes after it, mid-await.
      setTimeout(() => void holder`select pg_advisory_unlock(hashtextextended(${RELAY_LOCK}, 0))`.catch(() => undefined), 1200);
      const got = await events.await(mark, t.organizationId, 1);
      expect(got.map((e) => e.data.title)).toEqual(["first", "second"]);
    } finally {
      await holder`select pg_advisory_unlock_all()`;
    }
  });
});
