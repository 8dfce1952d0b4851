import { StartupError } from "@tasksvc/config";
import { SERVICES, type ServiceEntry } from "@tasksvc/contracts";
import {
  checkDb,
  createDb,
  databaseErrorAsAppError,
  databaseRole,
  ensureDatabase,
  migrate,
  nodeRole,
  outboxDrains,
  watchTransactions,
  type Database,
  type WatchedDatabase,
} from "@tasksvc/db";
import {
  Health,
  natsDisconnects,
  natsReconnects,
  sampled,
  settleWithin,
  sharedFor,
  startOpsServer,
  within,
  type CheckResult,
  type OpsServer,
} from "@tasksvc/telemetry";
import type { Logger } from "@tasksvc/logger";
import { client, connectNats, ensureStream, serve } from "@tasksvc/nats";
import type { BaseConfig, DbConfig, DbServiceContext, DbServiceDefinition, Running, ServiceContext, ServiceDefinition } from "./definition.js";
import { guardNamespace } from "./namespace-guard.js";

interface Step {
  what: string;
  run: () => Promise<void> | void;
}

/**
 * At stop, everything `start` registered is undone last-registered first: services serve last, so they stop taking requests before
 * the work those requests rely on stops, and the pool ends last. Readiness fails first, then SHUTDOWN_DELAY passes (decision 0018).
 */
export async function startService<C extends BaseConfig, R>(def: ServiceDefinition<C, R>, cfg: C, log: Logger): Promise<Running<R>> {
  const steps: Step[] = [];
  // 5 s for queries in flight at an orderly stop; 1 s when start failed and nothing is in flight.
  let endTimeout = 5;
  let db: Database | undefined;
  let watched: WatchedDatabase | undefined;

  if (isDbService(def)) {
    const dbCfg = cfg as BaseConfig as DbConfig;
    const url = dbCfg.DATABASE_URL;
    // Migrations hold a session (an advisory lock, CREATE INDEX CONCURRENTLY), which a pooler in transaction mode cannot give.
    if (dbCfg.DATABASE_POOL_MODE === "transaction" && !dbCfg.DATABASE_MIGRATION_URL)
      throw new StartupError(
        `DATABASE_POOL_MODE=transaction needs DATABASE_MIGRATION_URL (or ${def.name.toUpperCase()}_DATABASE_MIGRATION_URL): a connection to Postgres itself, or through a pooler in session mode, for the migrations`,
      );
    const migrationUrl = dbCfg.DATABASE_MIGRATION_URL ?? url;
    await ensureDatabase(migrationUrl);
    await migrate({
      url: migrationUrl,
      schema: def.schema,
      dir: def.migrations,
      log,
      ...(def.indexes ? { indexes: def.indexes } : {}),
      ...(def.backfills ? { backfills: def.backfills } : {}),
    });
    const pool = createDb({
      url,
      schema: def.schema,
      poolMode: dbCfg.DATABASE_POOL_MODE,
      statementTimeoutMs: dbCfg.DATABASE_STATEMENT_TIMEOUT,
      ...def.db,
      ...(dbCfg.DATABASE_POOL_SIZE === undefined ? {} : { max: dbCfg.DATABASE_POOL_SIZE }),
    });
    // Timed transactions, for the readiness of the slots.
    watched = watchTransactions(pool);
    db = watched.db;
    steps.push({ what: "database pool", run: () => pool.end({ timeout: endTimeout }) });
  }

  // After the migrations, so a failure before leaves nothing open.
  const health = new Health();
  const opsPortSetting = cfg.OPS_PORT ?? (SERVICES as readonly ServiceEntry[]).find((s) => s.name === def.name)?.opsPort;
  let ops: OpsServer | undefined;
  if (opsPortSetting !== undefined) {
    try {
      ops = await startOpsServer({ port: opsPortSetting, health });
    } catch (e) {
      await db?.end({ timeout: 1 }).catch(() => undefined);
      if ((e as { code?: string }).code === "EADDRINUSE")
        throw new StartupError(`OPS_PORT ${opsPortSetting} is already in use: stop the other process or set OPS_PORT to a free port`);
      throw e;
    }
  }
  const opsServer = ops;
  const closeOps = () => opsServer?.close();

  const release = async (): Promise<void> => {
    let first: unknown;
    for (const step of steps.splice(0).reverse()) {
      try {
        await step.run();
      } catch (err) {
        log.error({ err }, `stopping: ${step.what} failed`);
        first ??= err;
      }
    }
    if (first !== undefined) throw first;
  };

  try {
    if (db) await checkDb(db, (cfg as BaseConfig as DbConfig).DATABASE_URL, isDbService(def) ? def.schema : undefined);
    const nc = await connectNats({ url: cfg.NATS_URL, name: def.name });
    steps.push({ what: "NATS drain", run: () => nc.drain() });
    let natsUp = true;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") {
          natsUp = false;
          natsDisconnects.inc();
        } else if (s.type === "reconnect") {
          natsUp = true;
          natsReconnects.inc();
        }
      }
    })();
    const removeNatsSample = sampled.natsConnected(() => [{ value: natsUp && !nc.isClosed() ? 1 : 0 }]);
    steps.push({ what: "NATS metrics", run: () => removeNatsSample() });
    health.check("nats", () => (nc.isClosed() ? "unreachable" : within(1000, nc.flush())));
    // Before any stream is touched: a start on another stack's namespace changes nothing of it.
    if (db) await guardNamespace(nc, db.sql, { namespace: cfg.NATS_NAMESPACE, service: def.name, replicas: cfg.NATS_STREAM_REPLICAS });
    for (const stream of def.streams?.(cfg.NATS_NAMESPACE) ?? []) await ensureStream(nc, { num_replicas: cfg.NATS_STREAM_REPLICAS, ...stream });

    const namespace = cfg.NATS_NAMESPACE;
    const ctx: ServiceContext<C> = {
      name: def.name,
      cfg,
      log,
      nc,
      namespace,
      serve(catalog, handlers) {
        const served = serve(nc, catalog, handlers, { namespace, log, classify: databaseErrorAsAppError });
        steps.push({ what: `serving ${catalog.service}`, run: () => served.drain() });
      },
      client(catalog, opts) {
        return client(nc, catalog, { namespace, timeoutMs: opts.timeoutMs });
      },
      every(ms, what, fn) {
        let inFlight: Promise<void> | undefined;
        const timer = setInterval(() => {
          if (inFlight) return;
          inFlight = Promise.resolve()
            .then(fn)
            .then(
              () => undefined,
              (err: unknown) => log.warn({ err }, `${what} failed`),
            )
            .finally(() => {
              inFlight = undefined;
            });
        }, ms);
        timer.unref();
        steps.push({
          what,
          run: async () => {
            clearInterval(timer);
            await inFlight;
          },
        });
      },
      onStop(fn) {
        steps.push({ what: "a stop hook", run: fn });
      },
      health,
    };
    const result =
      isDbService(def) && db
        ? await def.start({ ...ctx, db } as DbServiceContext<C & DbConfig>)
        : await (def as { start(c: ServiceContext<C>): Promise<R> }).start(ctx);
    // After start, which started the outbox relays the checks look for.
    if (db && watched) steps.push({ what: "database checks", run: await startDbChecks(health, db, watched, cfg as BaseConfig as DbConfig) });
    // A request sent the moment the replica is ready must find every subscription on the server.
    await nc.flush();
    health.serving();
    log.info({ namespace, ops_port: opsServer?.port }, `${def.name} service ready`);

    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        health.stopping();
        if (cfg.SHUTDOWN_DELAY > 0) {
          log.info({ delay_ms: cfg.SHUTDOWN_DELAY }, "stopping: not ready any more; draining after the shutdown delay");
          await new Promise((r) => setTimeout(r, cfg.SHUTDOWN_DELAY));
        }
        try {
          await release();
        } finally {
          await closeOps();
        }
        log.info(`${def.name} service stopped`);
      })());
    const extra = typeof result === "object" && result !== null ? result : {};
    // Running<R> is exactly what is built here; the conditional type cannot see through it.
    return { ...extra, stop, opsPort: opsServer?.port } as Running<R>;
  } catch (e) {
    endTimeout = 1;
    await release().catch(() => undefined);
    await closeOps();
    throw e;
  }
}

/** A standby answers `select 1` but fails every write, and a stuck slot never comes back by itself; one check, so the set reported stays as it was. */
async function startDbChecks(health: Health, db: Database, watched: WatchedDatabase, cfg: DbConfig): Promise<() => void> {
  // The pool may refuse a standby as it connects, so then the node itself is asked why.
  const role = sharedFor(500, () =>
    databaseRole(db.sql).catch(async (e: unknown) => {
      const r = await nodeRole(cfg.DATABASE_URL).catch(() => "primary" as const);
      if (r === "primary") throw e;
      return r;
    }),
  );
  const roleCheck = (ms: number) => settleWithin<CheckResult>(ms, () => role().then((r) => (r === "primary" ? "ok" : r)), "unreachable");
  const stuck = () => {
    const a = watched.ages();
    return Math.max(a.inUse, a.waiting) * 1000 >= cfg.DATABASE_TRANSACTION_STUCK_AFTER;
  };
  health.check("postgres", async () => {
    const r = await roleCheck(1000);
    return r === "ok" && stuck() ? "stuck" : r;
  });
  const drains = sharedFor(500, () => outboxDrains(db, cfg.OUTBOX_STALL_AFTER));
  // Just started, no relay is stalled and nothing is queried; should the question fail all the same, a relay exists.
  const relays = await drains().catch(() => undefined);
  if (relays === undefined || relays.length > 0) health.check("outbox", async () => ((await drains()).some((d) => d.stalled) ? "stalled" : "ok"));
  const removers = [
    // Within the scrape's own second, so a database that does not answer reads 0, not absent.
    sampled.dbPrimary(async () => [{ value: (await roleCheck(800)) === "ok" ? 1 : 0 }]),
    sampled.dbTransactionOldest(() => {
      const a = watched.ages();
      return [
        { labels: { state: "in_use" }, value: a.inUse },
        { labels: { state: "waiting" }, value: a.waiting },
      ];
    }),
    sampled.outboxStalled(async () => (await drains()).map((d) => ({ labels: { outbox: d.outbox }, value: d.stalled ? 1 : 0 }))),
  ];
  return () => {
    for (const r of removers) r();
  };
}

function isDbService<C extends BaseConfig, R>(def: ServiceDefinition<C, R>): def is ServiceDefinition<C, R> & DbServiceDefinition<C & DbConfig, R> {
  return typeof def.schema === "string";
}
