import { randomUUID } from "node:crypto";
import { type AuditEvent, type AuditMessage, auditSubject } from "@tasksvc/contracts";
import { connectNats, encodeJson, jetstream, type NatsConnection } from "@tasksvc/nats";
import { e2eContext, eventually, startExtraReplicas, type Tenant } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allAuditEvents, firstBroken } from "./audit-helpers.js";

// The chain consumer stores the events of one fetch in one transaction. Bursts of events of three
// organizations, interleaved, some published twice (a relay that crashed after its publish sends
// again), reach two keys replicas at once: each organization's log must still hold every event
// once, numbered 1 to n without gap, each hash linking to the one before.
const { gw, f, stack } = e2eContext();
let nc: NatsConnection;
const replicas: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "audit-chain-batches" });
  replicas.push(...(await startExtraReplicas(stack, "keys", 1, {})));
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await nc?.drain();
});

const oldestFirst = (events: AuditEvent[]) => [...events].sort((a, b) => a.sequence - b.sequence);

function message(t: Tenant, n: number): AuditMessage {
  return {
    id: `aud_batch_${randomUUID().replaceAll("-", "")}`,
    organization_id: t.organizationId,
    action: "label.deleted",
    actor: { type: "system", id: "system", user_id: null },
    target: { type: "label", id: `lbl_batch_${n}` },
    changes: { name: { from: `label ${n}`, to: null } },
    request_id: null,
    ip: null,
    user_agent: null,
    created_at: new Date().toISOString(),
  };
}

describe("the audit chain, stored a batch at a time", () => {
  it("when bursts of three organizations' events, some sent twice, reach two consumers at once, then each log holds every event once, 1 to n, and verifies", async () => {
    const tenants = await Promise.all([f.tenant(), f.tenant(), f.tenant()]);
    const js = jetstream(nc);
    const subject = auditSubject(stack.namespace, "tasks");
    const sent = new Map<string, Set<string>>(tenants.map((t) => [t.organizationId, new Set()]));
    for (let burst = 0; burst < 6; burst++) {
      const messages = Array.from({ length: 30 }, (_, i) => message(tenants[i % 3] as Tenant, burst * 30 + i));
      // Every fifth one again, later in the same burst.
      const twice = messages.filter((_, i) => i % 5 === 0);
      await Promise.all([...messages, ...twice].map((m) => js.publish(subject, encodeJson(m))));
      for (const m of messages) sent.get(m.organization_id)?.add(m.id);
    }
    for (const t of tenants) {
      const mine = sent.get(t.organizationId) as Set<string>;
      // The tenant's own setup (its owner, its first key) is chained too, and may land later than ours.
      const events = await eventually(
        async () => {
          const all = oldestFirst(await allAuditEvents(gw, t.apiKey));
          expect(all.filter((e) => mine.has(e.id)).length).toBe(mine.size);
          return all;
        },
        { timeoutMs: 30_000 },
      );
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: events.length }, (_, k) => k + 1));
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      expect(firstBroken(events)).toBeNull();
    }
  });
});
