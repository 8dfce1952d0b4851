import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { serviceSettings, parseConfig, StartupError } from "@tasksvc/config";
import { createDb } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { eventually } from "@tasksvc/testing";
import { z } from "zod";
import { describe, expect, inject, it } from "vitest";
import { defineService, startService, type DbServiceContext, type ServiceContext } from "../src/index.js";

const stack = inject("stack");
const Config = z.object({ ...serviceSettings });
const catalog = { service: "runtimetest", ops: { echo: { input: z.object({ text: z.string() }), output: z.object({ text: z.string() }) } } } as const;
const rpcCtx = { request_id: "req_runtime_test", organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };

/** Each test its own namespace and schema (migrations run per schema), and a log it can read. */
function setup() {
  const id = randomUUID().slice(0, 8);
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const env = { DATABASE_URL: stack.databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: `${stack.namespace}_rt_${id}` };
  return {
    schema: `runtime_test_${id}`,
    cfg: parseConfig(Config, env),
    lines,
    log: createLogger({ service: "runtimetest", level: "debug", destination: sink }),
  };
}

describe("startService()", () => {
  it("when a service starts, then its schema is migrated, it serves its catalog, and its start's result comes back with stop()", async () => {
    const { schema, cfg, log } = setup();
    const def = defineService({
      name: "runtimetest",
      schema,
      migrations: fileURLToPath(new URL("./migrations", import.meta.url)),
      config: Config,
      async start({ db, serve }) {
        await db.sql`insert into probe (id) values (1)`;
        serve(catalog, { echo: async ({ text }) => ({ text }) });
        return { answer: 42 };
      },
    });
    const running = await startService(def, cfg, log);
    let caller: ServiceContext["client"] | undefined;
    const probe = defineService({
      ...def,
      name: "runtimeprobe",
      async start(ctx) {
        caller = ctx.client;
      },
    });
    const other = await startService(probe, cfg, log);
    try {
      expect(running.answer).toBe(42);
      if (!caller) throw new Error("probe did not start");
      const reply = await caller(catalog, { timeoutMs: 2000 }).call("echo", { text: "hi" }, rpcCtx);
      expect(reply).toEqual({ text: "hi" });
    } finally {
      await other.stop();
      await running.stop();
    }
  });

  it("when a service stops, then what start registered is undone last-registered first, while NATS and the pool still work, and they close after", async () => {
    const { schema, cfg, log } = setup();
    const order: string[] = [];
    let ctxSeen: DbServiceContext | undefined;
    const def = defineService({
      name: "runtimetest",
      schema,
      migrations: fileURLToPath(new URL("./migrations", import.meta.url)),
      config: Config,
      async start(ctx) {
        ctxSeen = ctx;
        const check = async (what: string) => {
          // Every hook runs before the NATS drain and the pool's end: both still answer here.
          expect(ctx.nc.isClosed(), what).toBe(false);
          await ctx.db.sql`select 1`;
          order.push(what);
        };
        ctx.onStop(() => check("registered first"));
        ctx.every(60_000, "upkeep", async () => undefined);
        ctx.serve(catalog, { echo: async ({ text }) => ({ text }) });
        ctx.onStop(() => check("registered last"));
      },
    });
    const running = await startService(def, cfg, log);
    await Promise.all([running.stop(), running.stop()]);
    expect(order).toEqual(["registered last", "registered first"]);
    if (!ctxSeen) throw new Error("start did not run");
    expect(ctxSeen.nc.isClosed()).toBe(true);
    await expect(ctxSeen.db.sql`select 1`).rejects.toThrow();
  });

  it("when a periodic job fails, then the failure is logged with its name and the job runs again", async () => {
    const { schema, cfg, log, lines } = setup();
    let runs = 0;
    const def = defineService({
      name: "runtimetest",
      schema,
      migrations: fileURLToPath(new URL("./migrations", import.meta.url)),
      config: Config,
      async start({ every }) {
        every(10, "probe sweep", async () => {
          runs++;
          throw new Error("sweep broke");
        });
      },
    });
    const running = await startService(def, cfg, log);
    try {
      await eventually(() => runs >= 2, { intervalMs: 10, what: "a second run" });
      const failed = lines.find((l) => l["msg"] === "probe sweep failed");
      expect(failed, JSON.stringify(lines)).toMatchObject({ level: 40, err: { message: "sweep broke" } });
    } finally {
      await running.stop();
    }
  });

  it("when start fails, then what it had registered is undone, NATS and the pool are closed, and its error is thrown", async () => {
    const { schema, cfg, log } = setup();
    const undone: string[] = [];
    let ctxSeen: DbServiceContext | undefined;
    const def = defineService({
      name: "runtimetest",
      schema,
      migrations: fileURLToPath(new URL("./migrations", import.meta.url)),
      config: Config,
      async start(ctx) {
        ctxSeen = ctx;
        ctx.onStop(() => void undone.push("hook"));
        throw new StartupError("PORT 1 is already in use");
      },
    });
    await expect(startService(def, cfg, log)).rejects.toThrow(StartupError);
    expect(undone).toEqual(["hook"]);
    if (!ctxSeen) throw new Error("start did not run");
    expect(ctxSeen.nc.isClosed()).toBe(true);
    await expect(ctxSeen.db.sql`select 1`).rejects.toThrow();
  });

  it("when the pool mode is transaction and no migration URL is set, then it stops before touching the database, naming the setting to add", async () => {
    const { schema, cfg, log } = setup();
    let started = false;
    const def = defineService({
      name: "runtimetest",
      schema,
      migrations: fileURLToPath(new URL("./migrations", import.meta.url)),
      config: Config,
      async start() {
        started = true;
      },
    });
    const pooled = { ...cfg, DATABASE_POOL_MODE: "transaction" as const, DATABASE_MIGRATION_URL: undefined };
    await expect(startService(def, pooled, log)).rejects.toThrow(/needs DATABASE_MIGRATION_URL \(or RUNTIMETEST_DATABASE_MIGRATION_URL\)/);
    expect(started).toBe(false);
    const db = createDb({ url: stack.databaseUrl, schema: "public", max: 2 });
    try {
      expect(await db.sql`select 1 from pg_namespace where nspname = ${schema}`).toHaveLength(0);
    } finally {
      await db.end({ timeout: 1 });
    }
  });
});
