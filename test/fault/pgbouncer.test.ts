import { randomBytes } from "node:crypto";
import { SERVICES as REGISTRY } from "@tasksvc/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectClean } from "./expect-clean.js";
import { endToEndFlow } from "./flow.js";
import { prepareLoadTenants, runMixedLoad, verify } from "./load.js";
import { startPrivatePgBouncer, type PrivatePgBouncer } from "./private-pgbouncer.js";
import { startProcessStack, type ProcessStack } from "./processes.js";

/**
 * The stack behind PgBouncer in transaction pooling mode, as platform teams run many replicas on
 * one Postgres: each service's replicas reach their schema through their own PgBouncer database
 * entry (its connect_query gives the search_path, which a transaction pooler cannot take from the
 * client), the migrations go to Postgres itself (DATABASE_MIGRATION_URL), and every entry has
 * POOL server connections while the replicas open up to 10 each. The mixed load of the fault
 * suite then runs over it: every acknowledged write stored once, one event per change, no 5xx.
 */
const POOL = 3;
const DB_SERVICES = ["keys", "tasks", "boards", "webhooks", "gateway"] as const;
const REPLICAS = { gateway: 2, tasks: 2 } as const;

let bouncer: PrivatePgBouncer;
let stack: ProcessStack;

beforeAll(async () => {
  expect(REGISTRY.map((s) => s.name).filter((n) => n !== "delivery")).toEqual(expect.arrayContaining([...DB_SERVICES]));
  const database = `tasksvc_fault_bouncer_${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
  const pgBase = new URL(process.env["DATABASE_URL"] || "postgres://127.0.0.1:5432/postgres");
  bouncer = await startPrivatePgBouncer({
    pgPort: Number(pgBase.port || 5432),
    poolSize: POOL,
    databases: DB_SERVICES.map((s) => ({ alias: `${database}_${s}`, dbname: database, connectQuery: `SET search_path TO ${s}` })),
  });
  const direct = new URL(pgBase);
  direct.pathname = `/${database}`;
  const env: Record<string, string> = {
    DATABASE_POOL_MODE: "transaction",
    DATABASE_MIGRATION_URL: direct.toString(),
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  };
  for (const s of DB_SERVICES) env[`${s.toUpperCase()}_DATABASE_URL`] = bouncer.url(`${database}_${s}`);
  stack = await startProcessStack({ database, replicas: REPLICAS, env });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await bouncer?.stop();
});

describe("the stack behind PgBouncer in transaction mode", () => {
  it("when 24 clients create, PATCH, link, plan, make projects and keys for 10 s over 2 gateways and 2 tasks replicas, with 3 server connections per service, then every acknowledged write is stored once with one event per change and nothing answers 5xx", async () => {
    const tenants = await prepareLoadTenants(stack, 2);
    const result = await runMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants, clients: 24, durationMs: 10_000 });
    expectClean(await verify(stack, result, { label: `mixed load through PgBouncer (pool ${POOL} per service)` }), stack.unexpectedExits);

    // The load went through PgBouncer, within its pools: no entry used more server connections
    // than its pool, while the tasks replicas alone may open 20.
    const pools = (await bouncer.pools()).filter((p) => p.database.endsWith("_tasks"));
    expect(pools.length).toBeGreaterThan(0);
    for (const p of pools) expect(p.sv_active + p.sv_idle + p.sv_used, JSON.stringify(p)).toBeLessThanOrEqual(POOL);
    expect(
      pools.reduce((n, p) => n + p.sv_active + p.sv_idle + p.sv_used, 0),
      "server connections of the tasks entry",
    ).toBeGreaterThan(0);
  }, 120_000);

  it("when a user goes through every service once (keys, tasks, boards, webhooks, idempotency), then each step answers as it does on a direct connection", async () => {
    await endToEndFlow(stack, stack.gatewayUrls[0] ?? "");
  }, 90_000);
});
