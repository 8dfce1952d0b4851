import { randomBytes } from "node:crypto";
import { SERVICES as REGISTRY } from "@tasksvc/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectClean } from "./expect-clean.js";
import { endToEndFlow } from "./flow.js";
import { eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { prepareLoadTenants, runMixedLoad, startMixedLoad, verify } from "./load.js";
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
const DB_SERVICES = ["keys", "tasks", "boards", "webhooks", "notifications", "gateway"] as const;
const REPLICAS = { gateway: 2, tasks: 2 } as const;

let bouncer: PrivatePgBouncer;
let stack: ProcessStack;
let database: string;

beforeAll(async () => {
  expect(REGISTRY.map((s) => s.name).filter((n) => n !== "delivery")).toEqual(expect.arrayContaining([...DB_SERVICES]));
  database = `tasksvc_fault_bouncer_${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
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

  it("when Postgres ends PgBouncer's server connections again and again under mixed load, then no acknowledged write is lost or duplicated and each change has exactly one event", async () => {
    // Behind a transaction pooler no session setting guards a lost transaction's statements;
    // the slots' one-connection driver instances must. Every 150 ms for 3 s, every server
    // connection of the stack's database is terminated, mid-transaction or not.
    const tenants = await prepareLoadTenants(stack, 2);
    const load = startMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants, clients: 16, durationMs: 30_000 });
    const killer = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
    let terminated = 0;
    try {
      await eventually(() => load.progress().acknowledged >= 100, { what: "the load to be under way", timeoutMs: 20_000 });
      const stormUntil = Date.now() + 3000;
      while (Date.now() < stormUntil) {
        const rows = await killer`
          select pg_terminate_backend(pid) as ok from pg_stat_activity
          where datname = ${database} and application_name like 'tasksvc-%' and pid <> pg_backend_pid()`;
        terminated += rows.filter((r) => r["ok"]).length;
        // The storm's pace, not a wait for anything.
        await new Promise((r) => setTimeout(r, 150));
      }
      const after = load.progress().acknowledged;
      await eventually(() => load.progress().acknowledged >= after + 100, { what: "load after the storm", timeoutMs: 30_000 });
    } finally {
      load.stop();
      await killer.end({ timeout: 1 });
    }
    const result = await load.done;
    const report = await verify(stack, result, { label: `server connections terminated through PgBouncer (${terminated} in 3 s)` });
    const lost = report.kinds.reduce((a, k) => a + k.lost, 0);
    const duplicated = report.kinds.reduce((a, k) => a + k.duplicated, 0);
    console.log(
      `fault: ${terminated} server connections terminated behind PgBouncer; lost ${lost}, duplicated ${duplicated}, ${result.serverErrors.total} 5xx`,
    );
    expect(terminated).toBeGreaterThan(0);
    // A lost connection answers 503 (retry), never 500.
    expect(
      Object.keys(result.serverErrors.byCode).filter((k) => !k.startsWith("503")),
      JSON.stringify(result.serverErrors),
    ).toEqual([]);
    expect(report.problems).toEqual([]);
    expect({ lost, duplicated, events: report.events.stored }).toEqual({ lost: 0, duplicated: 0, events: report.events.expected });
    expect(stack.unexpectedExits.map((e) => `${e.service}#${e.index} exit ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
  }, 150_000);

  it("when a user goes through every service once (keys, tasks, boards, webhooks, idempotency), then each step answers as it does on a direct connection", async () => {
    await endToEndFlow(stack, stack.gatewayUrls[0] ?? "");
  }, 90_000);
});
