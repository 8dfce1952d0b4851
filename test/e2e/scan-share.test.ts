import { rpcSubject } from "@tasksvc/contracts";
import { connectNats, type NatsConnection } from "@tasksvc/nats";
import { e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// An organization's own share of scans (set-limits --scans) travels with each of its requests to
// the tasks service, whose gate runs that many of its lists at once; without one, the request
// carries none and the gate keeps its fair share. Seen here on the wire: a plain subscriber beside
// the service's queue group receives a copy of every listTasks request the gateway sends.
const { gw, f, stack } = e2eContext();
const seen: Array<{ ctx: { organization_id?: string; scan_share?: number } }> = [];
let nc: NatsConnection | undefined;

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "scan-share-test" });
  nc.subscribe(rpcSubject(stack.namespace, "tasks", "listTasks"), {
    callback: (_err, msg) => {
      seen.push(msg.json());
    },
  });
  await nc.flush();
});
afterAll(async () => {
  await nc?.close();
});

/** The context of this organization's latest list as the gateway sent it. */
async function sentContext(t: Tenant) {
  seen.length = 0;
  const r = await gw.get("/v1/tasks?limit=5", { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return eventually(() => seen.find((m) => m.ctx.organization_id === t.organizationId)?.ctx ?? false);
}

describe("an organization's share of scans", () => {
  it("when an operator sets it, then its lists carry it to the tasks service; an organization without one carries none", async () => {
    const plain = await f.tenant("team");
    const raised = await f.tenant("team");
    const set = await f.admin("setLimits", { org: raised.organizationId, scans: 4 });
    expect(set.limits).toMatchObject({ scans: 4 });
    expect((await sentContext(plain)).scan_share).toBeUndefined();
    // The gateway's cached identity is dropped by the change, on every replica.
    await eventually(async () => (await sentContext(raised)).scan_share === 4);
    const lowered = await f.admin("setLimits", { org: raised.organizationId, scans: 1 });
    expect(lowered.limits).toMatchObject({ scans: 1 });
    await eventually(async () => (await sentContext(raised)).scan_share === 1);
  });

  it("when set-limits is given a share of 0 or past any replica's connections, then it is refused naming the field and nothing changes", async () => {
    const t = await f.tenant("team");
    const refused = await f.admin("setLimits", { org: t.organizationId, scans: 0 }).catch((e: unknown) => e);
    expect(String(refused)).toContain("scans");
    // More than any replica's connections is refused too, rather than stored and capped unseen.
    const tooMany = await f.admin("setLimits", { org: t.organizationId, scans: 201 }).catch((e: unknown) => e);
    expect(String(tooMany)).toContain("scans");
    expect((await sentContext(t)).scan_share).toBeUndefined();
  });
});
