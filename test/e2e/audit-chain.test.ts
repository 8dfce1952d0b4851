import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { AuditEvent } from "@tasksvc/contracts";
import { e2eContext, eventually, startExtraReplicas, type Tenant } from "@tasksvc/testing";
import { afterAll, describe, expect, it } from "vitest";
import { allAuditEvents, awaitAuditEvents, firstBroken, GENESIS } from "./audit-helpers.js";

// The chain: a client that reads every page and recomputes each hash from the first event verifies
// it; one stored event altered breaks it exactly there; writers racing from three services still
// get 1, 2, 3 … with no gap; the retention sweep deletes only a prefix, which the oldest kept
// event's prev_hash anchors.
const { gw, f, db, stack } = e2eContext();
const root = fileURLToPath(new URL("../..", import.meta.url));

/** The script of docs/api.md's "Checking the chain offline", as a reader would copy it. */
function docsScript(): string {
  const doc = readFileSync(`${root}/docs/api.md`, "utf8");
  const from = doc.indexOf("### Checking the chain offline");
  const block = /```js\n([\s\S]*?)```/.exec(doc.slice(from));
  if (from < 0 || !block?.[1]) throw new Error("docs/api.md has no script to check the chain");
  return block[1];
}
const replicas: Array<{ stop(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
});

const as = (t: Tenant) => ({ token: t.apiKey });
const oldestFirst = (events: AuditEvent[]) => [...events].sort((a, b) => a.sequence - b.sequence);

async function ok(p: Promise<{ status: number; text: string; body: unknown }>, status: number): Promise<Record<string, string>> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body as Record<string, string>;
}

/** Three audited changes: a key made and revoked, a label deleted. */
async function someChanges(t: Tenant): Promise<void> {
  const k = await ok(gw.post("/v1/api-keys", { name: "k" }, as(t)), 201);
  await ok(gw.delete(`/v1/api-keys/${k["id"]}`, as(t)), 200);
  const l = await ok(gw.post("/v1/labels", { name: `l-${randomUUID()}` }, as(t)), 201);
  await ok(gw.delete(`/v1/labels/${l["id"]}`, as(t)), 200);
}

describe("the audit chain", () => {
  it("when a client reads every page and recomputes the chain, then it verifies from 64 zeros, 1 to n with no gap", async () => {
    const t = await f.tenant();
    await someChanges(t);
    const events = oldestFirst(await awaitAuditEvents(gw, t.apiKey, "", 5));
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(events[0]?.prev_hash).toBe(GENESIS);
    expect(firstBroken(events)).toBeNull();
    // Small pages give the same events, newest first, each once.
    const paged: AuditEvent[] = [];
    let after: string | null = null;
    do {
      const url: string = `/v1/audit-events?limit=2${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
      const r = await gw.get(url, as(t));
      expect(r.status, r.text).toBe(200);
      paged.push(...(r.body.data as AuditEvent[]));
      after = r.body.has_more ? (r.body.next_cursor as string) : null;
    } while (after !== null);
    expect(paged.map((e) => e.sequence)).toEqual([5, 4, 3, 2, 1]);
  });

  it("when the script of the API guide checks a log, then it verifies it, and names the sequence of an altered event", async () => {
    const t = await f.tenant();
    await someChanges(t);
    await awaitAuditEvents(gw, t.apiKey, "", 5);
    const run = () =>
      spawnSync(process.execPath, ["--input-type=module", "-e", docsScript()], {
        cwd: root,
        env: { PATH: process.env["PATH"], TASKSVC_URL: stack.gatewayUrls[0], TASKSVC_KEY: t.apiKey },
        encoding: "utf8",
        timeout: 20_000,
      });
    const good = run();
    expect(good.status, good.stderr).toBe(0);
    expect(good.stdout).toContain("5 events verified");
    await db`
      update keys.audit_events set body = replace(body, '"ip":null', '"ip":"198.51.100.1"')
      where organization_id = ${t.organizationId} and sequence = 2`;
    const bad = run();
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("does not verify at sequence 2");
  });

  it("when the log holds more than a page, then the pages give every event once, newest first, and the whole chain verifies", async () => {
    const t = await f.tenant();
    for (let i = 0; i < 130; i++) await f.admin("setLimits", { org: t.organizationId, burst: 1000 + i });
    await awaitAuditEvents(gw, t.apiKey, "", 132);
    const events = await allAuditEvents(gw, t.apiKey);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 132 }, (_, i) => 132 - i));
    expect(firstBroken(oldestFirst(events))).toBeNull();
  });

  it("when one stored event is altered in the database, then verification breaks exactly at that event", async () => {
    const t = await f.tenant();
    await someChanges(t);
    const before = oldestFirst(await awaitAuditEvents(gw, t.apiKey, "", 5));
    expect(firstBroken(before)).toBeNull();
    const revoked = before.find((e) => e.action === "api_key.revoked")?.sequence ?? 0;
    const altered = await db`
      update keys.audit_events set body = replace(body, '"action":"api_key.revoked"', '"action":"api_key.created"')
      where organization_id = ${t.organizationId} and sequence = ${revoked}`;
    expect(altered.count).toBe(1);
    const after = oldestFirst(await allAuditEvents(gw, t.apiKey));
    expect(after[revoked - 1]?.action).toBe("api_key.created");
    expect(firstBroken(after)).toBe(revoked);
    // The events before it still verify on their own.
    expect(firstBroken(after.slice(0, revoked - 1))).toBeNull();
  });

  it("when 20 writers change one organization at once through three services, then sequences are 1 to 22 with no gap and the chain verifies", async () => {
    const t = await f.tenant("team");
    const writers = Array.from({ length: 20 }, (_, i) => async () => {
      if (i % 3 === 0) return ok(gw.post("/v1/api-keys", { name: `k${i}` }, as(t)), 201);
      if (i % 3 === 1) return ok(gw.post("/v1/webhook-endpoints", { url: `https://hooks.example.com/${i}-${randomUUID()}` }, as(t)), 201);
      const l = await ok(gw.post("/v1/labels", { name: `label ${i}` }, as(t)), 201);
      return ok(gw.delete(`/v1/labels/${l["id"]}`, as(t)), 200);
    });
    await Promise.all(writers.map((w) => w()));
    const events = oldestFirst(await awaitAuditEvents(gw, t.apiKey, "", 22, 30_000));
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.id)).size).toBe(22);
    expect(new Set(events.slice(2).map((e) => e.action))).toEqual(new Set(["api_key.created", "webhook_endpoint.created", "label.deleted"]));
    expect(firstBroken(events)).toBeNull();
  });

  it("when events pass their year, then the sweep deletes only the chain's oldest ones, and what is left verifies from its first event's prev_hash", async () => {
    const t = await f.tenant();
    await someChanges(t);
    const events = oldestFirst(await awaitAuditEvents(gw, t.apiKey, "", 5));
    // Made old: 1, 2 and 4. Only 1 and 2 may go: 3 is kept, so 4 stays to keep the chain whole.
    await db`
      update keys.audit_events set created_at = now() - interval '400 days'
      where organization_id = ${t.organizationId} and sequence in (1, 2, 4)`;
    replicas.push(...(await startExtraReplicas(stack, "keys", 1, { AUDIT_SWEEP_INTERVAL: "200ms" })));
    const kept = await eventually(async () => {
      const now = oldestFirst(await allAuditEvents(gw, t.apiKey));
      expect(now.map((e) => e.sequence)).toEqual([3, 4, 5]);
      return now;
    });
    expect(kept[0]?.prev_hash).toBe(events[1]?.hash);
    expect(firstBroken(kept)).toBeNull();
    // Numbering goes on after the sweep.
    await someChanges(t);
    const later = oldestFirst(await awaitAuditEvents(gw, t.apiKey, "", 6));
    expect(later.map((e) => e.sequence)).toEqual([3, 4, 5, 6, 7, 8]);
    expect(firstBroken(later)).toBeNull();
  });
});
