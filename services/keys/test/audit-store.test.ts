import type { AuditMessage } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { auditSystem } from "../src/domain/audit.js";
import { keysRepo } from "../src/repo/keys-repo.js";

const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "keys", max: 4, txMax: 4 });
const audit = auditSystem(db, { repo: keysRepo(db.sql) });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

/** An organization of its own, so the stack's consumer never appends to its chain. */
function messageOf(orgId: string): AuditMessage {
  return {
    id: newId("aud"),
    organization_id: orgId,
    action: "api_key.created",
    actor: { type: "system", id: "system", user_id: null },
    target: { type: "api_key", id: newId("key") },
    changes: {},
    request_id: null,
    ip: null,
    user_agent: null,
    created_at: new Date().toISOString(),
  };
}

describe("storing audit events in the chain", () => {
  it("when an event is delivered again after it was stored (concurrently too), then it is stored once and the head does not move", async () => {
    const orgId = newId("org");
    const first = messageOf(orgId);
    const second = messageOf(orgId);
    const store = async (m: AuditMessage) => (await audit.storeAll([m]))[0];
    expect(await store(first)).toBe("stored");
    expect(await store(first)).toBe("duplicate");
    const outcomes = await Promise.all([store(second), store(second), store(first)]);
    expect(outcomes.sort()).toEqual(["duplicate", "duplicate", "stored"]);
    const rows = await db.sql<{ id: string; sequence: string }[]>`
      select id, sequence::text from audit_events where organization_id = ${orgId} order by sequence`;
    expect(rows).toEqual([
      { id: first.id, sequence: "1" },
      { id: second.id, sequence: "2" },
    ]);
    const [head] = await db.sql<{ sequence: string }[]>`select sequence::text from audit_heads where organization_id = ${orgId}`;
    expect(head?.sequence).toBe("2");
  });

  it("when batches of two organizations' events, interleaved, with an event twice in one batch and one stored already, are stored at once, then each chain is 1 to n once per event and every hash links to the one before", async () => {
    const [a, b] = [newId("org"), newId("org")];
    const early = messageOf(a);
    expect(await audit.storeAll([early])).toEqual(["stored"]);
    const batchOne = Array.from({ length: 20 }, (_, i) => messageOf(i % 2 === 0 ? a : b));
    const batchTwo = Array.from({ length: 20 }, (_, i) => messageOf(i % 3 === 0 ? b : a));
    const [one, two] = await Promise.all([
      audit.storeAll([...batchOne, batchOne[3] as AuditMessage, early]),
      audit.storeAll([...batchTwo.slice(0, 10), early, ...batchTwo.slice(10)]),
    ]);
    expect(one).toEqual([...batchOne.map(() => "stored"), "duplicate", "duplicate"]);
    expect(two).toEqual([...batchTwo.slice(0, 10).map(() => "stored"), "duplicate", ...batchTwo.slice(10).map(() => "stored")]);
    for (const [org, count] of [
      [a, 1 + 10 + 13],
      [b, 10 + 7],
    ] as const) {
      const rows = await db.sql<{ id: string; sequence: string; body: string }[]>`
        select id, sequence::text, body from audit_events e where organization_id = ${org} order by e.sequence`;
      expect(rows.map((r) => Number(r.sequence))).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      expect(new Set(rows.map((r) => r.id)).size).toBe(count);
      let prev = "0".repeat(64);
      for (const r of rows) {
        const event = JSON.parse(r.body) as { prev_hash: string; hash: string };
        expect(event.prev_hash).toBe(prev);
        prev = event.hash;
      }
      const [head] = await db.sql<{ sequence: string; hash: string }[]>`select sequence::text, hash from audit_heads where organization_id = ${org}`;
      expect(head).toEqual({ sequence: String(count), hash: prev });
    }
  });
});
