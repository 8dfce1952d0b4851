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
    expect(await audit.store(first)).toBe("stored");
    expect(await audit.store(first)).toBe("duplicate");
    const outcomes = await Promise.all([audit.store(second), audit.store(second), audit.store(first)]);
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
});
