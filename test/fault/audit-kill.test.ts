import { randomUUID } from "node:crypto";
import { type AuditAction, auditStream } from "@tasksvc/contracts";
import { connectNats, jetstreamManager } from "@tasksvc/nats";
import { api, eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allAuditEvents, firstBroken } from "../e2e/audit-helpers.js";
import { prepareLoadTenants } from "./load.js";
import { seconds, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * Audited changes made without pause through three services while the keys service (the audit
 * outbox of keys changes, and the chain consumer of every service's events) and then the tasks
 * service are killed with SIGKILL right after changes were acknowledged, and started again. Every
 * acknowledged change's audit event must then be in the log exactly once, and the chain still
 * numbered without gap and verifiable.
 */
let stack: ProcessStack;
let sql: postgres.Sql;

beforeAll(async () => {
  stack = await startProcessStack();
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
});

interface Acked {
  action: AuditAction;
  target: string;
}

/** `loops` writers each making audited changes in turn (a key, a label, a webhook endpoint: each made and removed); answers what was acknowledged. */
function writers(url: string, apiKey: string, loops: number) {
  const gw = api(url);
  const acked: Acked[] = [];
  let stopped = false;
  const post = async (path: string, body: unknown) => {
    const r = await gw.post(path, body, { token: apiKey }).catch(() => undefined);
    return r !== undefined && r.status === 201 ? (r.body.id as string) : undefined;
  };
  const remove = async (path: string) => (await gw.delete(path, { token: apiKey }).catch(() => undefined))?.status === 200;
  const steps: Array<() => Promise<void>> = [
    async () => {
      const id = await post("/v1/api-keys", { name: "audited" });
      if (id === undefined) return;
      acked.push({ action: "api_key.created", target: id });
      if (await remove(`/v1/api-keys/${id}`)) acked.push({ action: "api_key.revoked", target: id });
    },
    async () => {
      const id = await post("/v1/labels", { name: `label ${randomUUID()}` });
      if (id !== undefined && (await remove(`/v1/labels/${id}`))) acked.push({ action: "label.deleted", target: id });
    },
    async () => {
      const id = await post("/v1/webhook-endpoints", { url: `https://hooks.example.com/${randomUUID()}` });
      if (id === undefined) return;
      acked.push({ action: "webhook_endpoint.created", target: id });
      if (await remove(`/v1/webhook-endpoints/${id}`)) acked.push({ action: "webhook_endpoint.deleted", target: id });
    },
  ];
  const running = Array.from({ length: loops }, async (_, i) => {
    for (let n = i; !stopped; n++) {
      const started = Date.now();
      await steps[n % steps.length]?.();
      // A failed request (a service down) is not retried at once: the writers' pace, not a wait for anything.
      await new Promise((res) => setTimeout(res, Math.max(0, 40 - (Date.now() - started))));
    }
  });
  return {
    acked,
    async stop() {
      stopped = true;
      await Promise.all(running);
    },
  };
}

describe("audited changes while the services that carry and chain them are killed", () => {
  it("when keys and then tasks get SIGKILL right after acknowledged changes and start again, then each acknowledged change is in the log exactly once, the chain whole", async () => {
    const url = stack.gatewayUrls[0] as string;
    const [owner] = await prepareLoadTenants(stack, 1);
    if (!owner) throw new Error("no tenant");
    const nc = await connectNats({ url: stack.natsUrl, name: "audit-kill-test" });
    const pending = async () => (await (await jetstreamManager(nc)).consumers.info(auditStream(stack.namespace), "keys-audit-chain")).num_pending;
    const outbox = async (schema: "keys" | "tasks") => Number((await sql`select count(*)::int as n from ${sql(schema)}.audit_outbox`)[0]?.["n"]);
    const w = writers(url, owner.apiKey, 4);
    try {
      for (const service of ["keys", "tasks"] as const) {
        const before = w.acked.length;
        await eventually(() => w.acked.length >= before + 30, { timeoutMs: 60_000, intervalMs: 5, what: `changes before ${service} is killed` });
        await stack.kill(service, 0, "SIGKILL");
        const killedAt = Date.now();
        const atKill = { acked: w.acked.length, outbox: await outbox(service), pending: await pending().catch(() => -1) };
        // With tasks down, the other services' changes go on and their events wait in the stream for
        // the chain; with keys down nothing is acknowledged, since every request's key is checked there.
        const down = w.acked.length;
        if (service === "tasks") await eventually(() => w.acked.length >= down + 5, { timeoutMs: 60_000, what: `changes while ${service} is down` });
        stack.restart(service, 0);
        await stack.waitReady();
        const back = w.acked.length;
        await eventually(() => w.acked.length >= back + 30, { timeoutMs: 60_000, what: `changes after ${service} is back` });
        console.log(`${service} killed: ${JSON.stringify(atKill)}; back and writing after ${seconds(Date.now() - killedAt)}`);
      }
    } finally {
      await w.stop();
      await nc.close();
    }
    const acked = w.acked;
    expect(acked.length).toBeGreaterThan(100);

    const log = await eventually(
      async () => {
        const events = await allAuditEvents(api(url), owner.apiKey);
        const seen = new Set(events.map((e) => `${e.action} ${e.target.id}`));
        const missing = acked.filter((a) => !seen.has(`${a.action} ${a.target}`));
        expect(missing.length, JSON.stringify(missing.slice(0, 5))).toBe(0);
        return events;
      },
      { timeoutMs: 90_000, intervalMs: 500, what: "every acknowledged change's audit event" },
    );
    const count = new Map<string, number>();
    for (const e of log) count.set(`${e.action} ${e.target.id}`, (count.get(`${e.action} ${e.target.id}`) ?? 0) + 1);
    expect([...count].filter(([, n]) => n > 1)).toEqual([]);
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
    const oldestFirst = [...log].sort((a, b) => a.sequence - b.sequence);
    expect(oldestFirst.map((e) => e.sequence)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    expect(firstBroken(oldestFirst)).toBeNull();
    expect(stack.unexpectedExits).toEqual([]);
  });
});
