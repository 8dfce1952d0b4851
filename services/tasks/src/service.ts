import { fileURLToPath } from "node:url";
import { serviceSettings } from "@tasksvc/config";
import { taskEventsStream, tasksChangedSubject, tasksRpc, TasksChanged } from "@tasksvc/contracts";
import { checkDb, createDb, databaseErrorAsAppError, ensureDatabase, migrate } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { connectNats, decodeJson, encodeJson, ensureStream, jetstream, nanos, serve } from "@tasksvc/nats";
import { z } from "zod";
import { taskCache } from "./domain/task-cache.js";
import { tasksService } from "./domain/tasks-service.js";
import { startRelay } from "./relay.js";
import { tasksRepo } from "./repo/tasks-repo.js";
import { tasksHandlers } from "./rpc.js";

export const TasksConfig = z.object({ ...serviceSettings });
export type TasksConfig = z.output<typeof TasksConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));
const SCHEMA = "tasks";
const SWEEP_EVERY_MS = 60 * 60_000;

/** Starts one tasks-service replica: migrate, make sure the event stream exists, serve, relay. */
export async function startTasks(cfg: TasksConfig, log: Logger) {
  await ensureDatabase(cfg.DATABASE_URL);
  await migrate({ url: cfg.DATABASE_URL, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  const db = createDb({ url: cfg.DATABASE_URL, schema: SCHEMA, max: 10 });
  await checkDb(db, cfg.DATABASE_URL);
  const nc = await connectNats({ url: cfg.NATS_URL, name: "tasks" });
  await ensureStream(nc, {
    name: taskEventsStream(cfg.NATS_NAMESPACE),
    subjects: [`${cfg.NATS_NAMESPACE}.evt.tasks.>`],
    max_age: nanos(7 * 24 * 3600_000),
    // Longer than any relay outage we expect to recover from without re-sending (decision 0008).
    duplicate_window: nanos(3600_000),
  });
  const relay = startRelay({ db, js: jetstream(nc), namespace: cfg.NATS_NAMESPACE, log });
  const repo = tasksRepo(db.sql);
  const cache = taskCache();
  const changedSubject = tasksChangedSubject(cfg.NATS_NAMESPACE);
  // Every replica hears every change (no queue group). A callback, not an iterator: it runs in
  // arrival order with the RPC subscriptions, before any request that was published after it.
  const changes = nc.subscribe(changedSubject, {
    callback: (err, msg) => {
      if (err) return void log.error({ err }, "change subscription error");
      const m = TasksChanged.safeParse(decodeJson(msg.data));
      if (m.success) cache.invalidate(m.data.organization_id, m.data.numbers);
      else cache.clear();
    },
  });
  // Broadcasts may be lost while disconnected: forget everything on any connection trouble.
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "reconnect" || s.type === "slowConsumer") cache.clear();
    }
  })();
  const svc = tasksService({
    repo,
    tx: (fn) => db.tx((t) => fn(tasksRepo(t as never))) as never,
    written: () => relay.notify(),
    cache,
    async changed(organizationId, numbers) {
      nc.publish(changedSubject, encodeJson({ organization_id: organizationId, numbers }));
      await nc.flush();
    },
  });
  const served = serve(nc, tasksRpc, tasksHandlers(svc), { namespace: cfg.NATS_NAMESPACE, log, classify: databaseErrorAsAppError });
  const sweeper = setInterval(() => {
    repo.idempotency.sweep().catch((err: unknown) => log.warn({ err }, "idempotency sweep failed"));
  }, SWEEP_EVERY_MS);
  sweeper.unref();
  log.info({ namespace: cfg.NATS_NAMESPACE }, "tasks service ready");
  return {
    async stop() {
      clearInterval(sweeper);
      await served.drain();
      changes.unsubscribe();
      await relay.stop();
      await nc.drain();
      await db.end({ timeout: 5 });
    },
  };
}
