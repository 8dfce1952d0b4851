import { fileURLToPath } from "node:url";
import { blobStoreSetting, natsBlobStore, s3BlobStore, type BlobStore } from "@tasksvc/blobs";
import { serviceSettings, settings } from "@tasksvc/config";
import { boardsRpc, systemContext, taskEventsStream, tasksChangedSubject, tasksRpc, TasksChanged } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { decodeJson, encodeJson, jetstream, nanos } from "@tasksvc/nats";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { attachmentsService } from "./domain/attachments.js";
import { capabilities } from "./domain/capabilities.js";
import { taskCache } from "./domain/task-cache.js";
import { recurrenceScheduler } from "./domain/scheduler.js";
import { tasksService } from "./domain/tasks-service.js";
import { startRelay } from "./relay.js";
import { attachmentsRepo } from "./repo/attachments-repo.js";
import { tasksRepo } from "./repo/tasks-repo.js";
import { tasksHandlers } from "./rpc.js";

export const TasksConfig = z.object({
  ...serviceSettings,
  /** Where attachment bytes live (decision 0016): `nats` (JetStream object store) or `s3://…`. */
  BLOB_STORE: blobStoreSetting,
  UPLOAD_TICKET_TTL: settings.duration("15m"),
  /** How often the recurrence scheduler looks for occurrences due (decision 0021). */
  RECURRENCE_TICK: settings.duration("30s"),
  /**
   * Runs the recurrence scheduler's clock this far ahead of the real one: for tests that need
   * tomorrow's occurrences now, never for production (decision 0021). 0s by default.
   */
  RECURRENCE_CLOCK_AHEAD: settings.duration("0s"),
  /** Bounds the scheduler's requests to the boards service (rollover). */
  RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS,
  DOWNLOAD_LINK_TTL: settings.duration("5m"),
});
export type TasksConfig = z.output<typeof TasksConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/** The tasks service: projects, tasks, dependencies; its outbox relayed to the task event stream. */
export const service = defineService({
  name: "tasks",
  schema: "tasks",
  migrations: MIGRATIONS_DIR,
  config: TasksConfig,
  db: { max: 10 },
  streams: (namespace) => [
    {
      name: taskEventsStream(namespace),
      subjects: [`${namespace}.evt.tasks.>`],
      max_age: nanos(7 * 24 * 3600_000),
      // Longer than any relay outage we expect to recover from without re-sending (decision 0008).
      duplicate_window: nanos(3600_000),
    },
  ],
  async start({ db, nc, namespace, log, serve, every, onStop, cfg, client }) {
    const relay = startRelay({ db, js: jetstream(nc), namespace, log });
    onStop(() => relay.stop());
    const repo = tasksRepo(db.sql);
    const cache = taskCache();
    const changedSubject = tasksChangedSubject(namespace);
    // Every replica hears every change (no queue group). A callback, not an iterator: it runs in
    // arrival order with the RPC subscriptions, before any request that was published after it
    // through the same server (on a cluster, see checkHits below).
    const changes = nc.subscribe(changedSubject, {
      callback: (err, msg) => {
        if (err) return void log.error({ err }, "change subscription error");
        const m = TasksChanged.safeParse(decodeJson(msg.data));
        if (m.success) cache.invalidate(m.data.organization_id, m.data.numbers);
        else cache.clear();
      },
    });
    onStop(() => changes.unsubscribe());
    // Broadcasts may be lost while disconnected: forget everything on any connection trouble.
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect" || s.type === "reconnect" || s.type === "slowConsumer") cache.clear();
      }
    })();
    const svc = tasksService({
      repo,
      tx: (fn) => db.tx((t) => fn(tasksRepo(t))),
      written: () => relay.notify(),
      cache,
      // On one server, hits are served as they are: the broadcast, flushed before the reply,
      // reaches every replica ahead of any later request (decision 0008). On a cluster it need not
      // (another route, or lost with a server that dies), so hits are checked against the row's
      // version first (decision 0017). Read per request: a reconnect may land elsewhere.
      checkHits: () => nc.info === undefined || nc.info.cluster !== undefined,
      async changed(organizationId, numbers) {
        nc.publish(changedSubject, encodeJson({ organization_id: organizationId, numbers }));
        await nc.flush();
      },
    });
    every(60 * 60_000, "idempotency sweep", () => repo.idempotency.sweep());
    // The events feed keeps 30 days (EVENT_RETENTION_DAYS); reads never show older ones, swept or not.
    every(60 * 60_000, "events sweep", () => repo.sweepEvents());
    // Recurring tasks' occurrences (decision 0021): every replica ticks; the (series, slot) key
    // makes each occurrence once whichever replica gets there first.
    // Rollover puts unfinished occurrences on their owners' boards through the boards service.
    const boards = client(boardsRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
    const scheduler = recurrenceScheduler(
      {
        repo,
        tx: (fn) => db.tx((t) => fn(tasksRepo(t))),
        written: () => relay.notify(),
        boards: { rollOver: async (input) => (await boards.call("rollOver", input, systemContext(newId("req")))).placed },
      },
      log,
    );
    every(cfg.RECURRENCE_TICK, "recurrence", () => scheduler.tick(new Date(Date.now() + cfg.RECURRENCE_CLOCK_AHEAD)));

    const store: BlobStore =
      cfg.BLOB_STORE.kind === "nats" ? await natsBlobStore(nc, namespace, { replicas: cfg.NATS_STREAM_REPLICAS }) : s3BlobStore(cfg.BLOB_STORE);
    onStop(() => store.close());
    const attRepo = attachmentsRepo(db.sql);
    // Read once: every replica signs and verifies capabilities with the same key (first start makes it).
    const capabilityKey = Buffer.from(await attRepo.secret("capability_key"), "hex");
    const att = attachmentsService({
      repo: attRepo,
      tx: (fn) => db.tx((t) => fn(attachmentsRepo(t))),
      store,
      caps: capabilities(capabilityKey),
      uploadTtlMs: cfg.UPLOAD_TICKET_TTL,
      downloadTtlMs: cfg.DOWNLOAD_LINK_TTL,
      warn: (err, what) => log.warn({ err }, `${what} failed`),
    });
    every(60_000, "attachment sweep", () => att.sweep());
    serve(tasksRpc, tasksHandlers(svc, att));
  },
});
