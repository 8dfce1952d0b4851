import { isAppError } from "@tasksvc/errors";
import { TASK_BACKFILLS } from "./repo/backfills.js";
import { TASK_INDEXES } from "./repo/indexes.js";
import { fileURLToPath } from "node:url";
import { blobStoreSetting, natsBlobStore, s3BlobStore, type BlobStore } from "@tasksvc/blobs";
import { serviceSettings, settings } from "@tasksvc/config";
import {
  KeysInvalidation,
  keysInvalidationSubject,
  keysRpc,
  rolloverMessages,
  taskEventsStream,
  taskJobs,
  tasksChangedSubject,
  tasksRpc,
  TasksChanged,
  webhookMessages,
} from "@tasksvc/contracts";
import { auditStreamSpec, consume, decodeJson, encodeJson, jetstream, nanos, outboxPublisher, pageBudget } from "@tasksvc/nats";
import { startAuditRelay } from "@tasksvc/db";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { capabilities, linkSigningKeysSetting } from "./domain/attachments/capabilities.js";
import { attachmentsSystem } from "./domain/attachments/system.js";
import { taskBatches } from "./domain/batches.js";
import { customFieldsSystem } from "./domain/custom-fields.js";
import { dependenciesSystem } from "./domain/dependencies.js";
import { dueDatesSystem } from "./domain/due-dates.js";
import { eventsSystem } from "./domain/events/system.js";
import { commentsSystem } from "./domain/comments.js";
import { followersSystem } from "./domain/followers.js";
import { labelsSystem } from "./domain/labels.js";
import { membersCache } from "./domain/members-cache.js";
import { projectsSystem } from "./domain/projects.js";
import { purgeSystem } from "./domain/purge.js";
import { recurrenceSystem } from "./domain/recurrence/system.js";
import { removalsSystem } from "./domain/removals.js";
import { tasksResources } from "./domain/resources.js";
import { taskCache } from "./domain/task-cache.js";
import { tasksSystem } from "./domain/tasks.js";
import { trashSystem } from "./domain/trash.js";
import { exportSettings, exportStream, startExports } from "./exports.js";
import { importSettings, importStream, startImports } from "./import-jobs.js";
import { startRelay } from "./relay.js";
import { rewindStream, startRewinds } from "./rewind-jobs.js";
import { tasksHandlers } from "./rpc.js";

export const TasksConfig = z.object({
  ...serviceSettings,
  BLOB_STORE: blobStoreSetting,
  UPLOAD_TICKET_TTL: settings.duration("15m"),
  RECURRENCE_TICK: settings.duration("30s"),
  /** For tests that need tomorrow's occurrences now, never for production. */
  RECURRENCE_CLOCK_AHEAD: settings.duration("0s"),
  /** How long before its due date a task gets task.due_soon. */
  DUE_SOON_WINDOW: settings.duration("24h").refine((ms) => ms <= 366 * 24 * 3600_000, "expected a duration of at most 366d"),
  /** How often due dates are checked: an event comes at most this late. */
  DUE_TICK: settings.duration("60s").refine((ms) => ms >= 100 && ms <= 3600_000, "expected a duration between 100ms and 1h"),
  DOWNLOAD_LINK_TTL: settings.duration("5m"),
  /** How long a deleted task stays restorable before it is erased. */
  TRASH_RETENTION: settings.duration("30d").refine((ms) => ms >= 1000 && ms <= 3650 * 24 * 3600_000, "expected a duration between 1s and 3650d"),
  /** How often the trash is checked for tasks to erase: one is erased at most this late. */
  PURGE_TICK: settings.duration("30s").refine((ms) => ms >= 100 && ms <= 60_000, "expected a duration between 100ms and 1m"),
  /** Never kept in the database. */
  LINK_SIGNING_KEYS: linkSigningKeysSetting,
  RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS,
  /** How long a membership the keys service confirmed is trusted here, as the gateways trust an identity. */
  AUTH_CACHE_TTL_MS: settings.AUTH_CACHE_TTL_MS,
  ...exportSettings,
  ...importSettings,
});
export type TasksConfig = z.output<typeof TasksConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

export const service = defineService({
  name: "tasks",
  schema: "tasks",
  migrations: MIGRATIONS_DIR,
  indexes: TASK_INDEXES,
  backfills: TASK_BACKFILLS,
  config: TasksConfig,
  // Two connections hold exports' snapshots, so an export never takes a write's slot.
  db: { max: 10, snapshots: 2 },
  streams: (namespace) => [
    {
      name: taskEventsStream(namespace),
      subjects: [`${namespace}.evt.tasks.>`],
      max_age: nanos(7 * 24 * 3600_000),
      // Longer than any relay outage we expect to recover from without re-sending (decision 0008).
      duplicate_window: nanos(3600_000),
    },
    {
      // Two days cover a boards outage over a weekend night without piling up.
      name: rolloverMessages.request.stream(namespace),
      subjects: [rolloverMessages.request.subject(namespace)],
      max_age: nanos(2 * 24 * 3600_000),
      duplicate_window: nanos(3600_000),
    },
    {
      // Work-queue retention: a job is gone once acknowledged; the removals table keeps what is pending.
      name: taskJobs.removal.stream(namespace),
      subjects: [taskJobs.removal.subject(namespace)],
      retention: "workqueue",
      max_age: nanos(7 * 24 * 3600_000),
      duplicate_window: nanos(10 * 60_000),
    },
    exportStream(namespace),
    importStream(namespace),
    auditStreamSpec(namespace),
    rewindStream(namespace),
  ],
  async start({ db, nc, namespace, log, serve, every, onStop, cfg, client }) {
    const relay = startRelay({ db, js: jetstream(nc), nc, namespace, log });
    onStop(() => relay.stop());
    // Not woken by writes: its few actions wait at most one poll, and task writes cost nothing more.
    const auditRelay = startAuditRelay({
      db,
      publisher: outboxPublisher(jetstream(nc)),
      service: "tasks",
      namespace,
      log,
      maxPayload: () => nc.info?.max_payload,
    });
    onStop(() => auditRelay.stop());
    const cache = taskCache();
    const changedSubject = tasksChangedSubject(namespace);
    const keys = client(keysRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
    const members = membersCache(
      {
        async current(ctx, organizationId, userIds) {
          return new Set((await keys.call("currentMembers", { organization_id: organizationId, user_ids: [...userIds] }, ctx)).user_ids);
        },
      },
      { ttlMs: cfg.AUTH_CACHE_TTL_MS },
    );
    const res = tasksResources(db, {
      written: () => relay.notify(),
      pageBytes: pageBudget(nc),
      cache,
      // On a cluster the broadcast may take another route or be lost, so hits are checked against the
      // row's version first (decision 0017). Read per request: a reconnect may land elsewhere.
      checkHits: () => nc.info === undefined || nc.info.cluster !== undefined,
      async changed(organizationId, numbers) {
        nc.publish(changedSubject, encodeJson({ organization_id: organizationId, numbers }));
        await nc.flush();
      },
      async changedAll(organizationId) {
        nc.publish(changedSubject, encodeJson({ organization_id: organizationId, numbers: [], all: true }));
        await nc.flush();
      },
      async startRemoval(job) {
        await jetstream(nc).publish(taskJobs.removal.subject(namespace), encodeJson(job), { msgID: taskJobs.removal.msgId(job) });
      },
      log,
      members: members.port,
      roles: {
        async roleOf(ctx, organizationId, userId) {
          try {
            return (await keys.call("getMember", { user_id: userId }, { ...ctx, organization_id: organizationId })).role;
          } catch (e) {
            if (isAppError(e) && e.code === "resource_not_found") return null;
            throw e;
          }
        },
      },
    });
    const events = eventsSystem(res);
    // Taken into this outbox, they reach the feed, the live stream and the fan-out in one order. The
    // stream is waited for in the background (a stack without webhooks has none), so readiness does not depend on it.
    const endpointEvents = await consume(nc, {
      stream: webhookMessages.endpointEvent.stream(namespace),
      durable: `${namespace}_tasks_endpoint_events`,
      schema: webhookMessages.endpointEvent.schema,
      concurrency: 4,
      ackWaitMs: 30_000,
      log,
      async handle(event) {
        await events.takeIn(event);
        return "ack";
      },
    });
    onStop(() => endpointEvents.stop());
    // Every replica hears every change (no queue group). A callback, not an iterator: it runs in arrival
    // order with the RPC subscriptions, before any request published after it through the same server.
    const changes = nc.subscribe(changedSubject, {
      callback: (err, msg) => {
        if (err) return void log.error({ err }, "change subscription error");
        const m = TasksChanged.safeParse(decodeJson(msg.data));
        if (m.success && m.data.all === true) cache.clear();
        else if (m.success) cache.invalidate(m.data.organization_id, m.data.numbers);
        else cache.clear();
      },
    });
    onStop(() => changes.unsubscribe());
    const memberships = nc.subscribe(keysInvalidationSubject(namespace), {
      callback: (err, msg) => {
        if (err) return void log.error({ err }, "membership subscription error");
        const m = KeysInvalidation.safeParse(decodeJson(msg.data));
        if (m.success) members.invalidate(m.data.organization_id);
        else members.clear();
      },
    });
    onStop(() => memberships.unsubscribe());
    // Broadcasts may be lost while disconnected: forget everything on any connection trouble.
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect" || s.type === "reconnect" || s.type === "slowConsumer") {
          cache.clear();
          members.clear();
        }
      }
    })();
    every(60 * 60_000, "idempotency sweep", () => res.repos.idempotency.sweep());
    const removals = removalsSystem(res);
    const removalJobs = await consume(nc, {
      stream: taskJobs.removal.stream(namespace),
      durable: `${namespace}_tasks_removals`,
      schema: taskJobs.removal.schema,
      concurrency: 2,
      ackWaitMs: 30_000,
      // Idempotent: a job that comes again finds only the tasks still carrying what it removes.
      confirmAcks: false,
      log,
      async handle(job, meta) {
        await removals.run(job, () => meta.working());
        return "ack";
      },
    });
    onStop(() => removalJobs.stop());
    every(60_000, "removal sweep", () => removals.sweep());
    // Reads never show events past the 30 days, swept or not.
    every(60 * 60_000, "events sweep", () => res.repos.events.sweep());
    // Every replica ticks; the (series, slot) key makes each occurrence once. Rollovers go by message,
    // so this service never calls boards.
    const js = jetstream(nc);
    const rollovers = rolloverMessages.request;
    const recurrence = recurrenceSystem(res, {
      boards: {
        async request(input) {
          await js.publish(rollovers.subject(namespace), encodeJson(input), { msgID: rollovers.msgId(input) });
        },
      },
    });
    every(cfg.RECURRENCE_TICK, "recurrence", () => recurrence.tick(new Date(Date.now() + cfg.RECURRENCE_CLOCK_AHEAD)));
    // Every replica ticks; a task's row records the due date each event was sent for, in the event's transaction.
    const dueDates = dueDatesSystem(res, { windowMs: cfg.DUE_SOON_WINDOW });
    every(cfg.DUE_TICK, "due dates", () => dueDates.tick(new Date()));

    const store: BlobStore =
      cfg.BLOB_STORE.kind === "nats" ? await natsBlobStore(nc, namespace, { replicas: cfg.NATS_STREAM_REPLICAS }) : await s3BlobStore(cfg.BLOB_STORE);
    onStop(() => store.close());
    if (cfg.LINK_SIGNING_KEYS.isDevKey) {
      log.warn("LINK_SIGNING_KEYS is not set: upload and download links are signed with the public development key; set it outside development");
    }
    const caps = capabilities({
      keys: cfg.LINK_SIGNING_KEYS.keys,
      lifetimeMs: { upload: cfg.UPLOAD_TICKET_TTL, download: cfg.DOWNLOAD_LINK_TTL, export: cfg.EXPORT_TTL },
    });
    const attachments = attachmentsSystem(res, {
      store,
      caps,
      uploadTtlMs: cfg.UPLOAD_TICKET_TTL,
      downloadTtlMs: cfg.DOWNLOAD_LINK_TTL,
    });
    every(60_000, "attachment sweep", () => attachments.sweep());
    // Every replica ticks; each chunk of an erasure holds the task's row, skipped by the others.
    const purge = purgeSystem(res, { store });
    every(cfg.PURGE_TICK, "trash purge", () => purge.tick());
    const exports = await startExports({ db, nc, namespace, log, cfg, res, store, caps, keys, onStop, every });
    const imports = await startImports({ nc, namespace, log, cfg, every, onStop }, { res, store, caps, keys });
    const rewinds = await startRewinds({ nc, namespace, log, every, onStop }, { res, retentionMs: cfg.TRASH_RETENTION });
    const tasks = tasksSystem(res);
    serve(
      tasksRpc,
      tasksHandlers({
        tasks,
        batches: taskBatches(res, { tasks }),
        projects: projectsSystem(res),
        labels: labelsSystem(res),
        customFields: customFieldsSystem(res),
        dependencies: dependenciesSystem(res),
        events,
        attachments,
        followers: followersSystem(res),
        comments: commentsSystem(res),
        trash: trashSystem(res, { retentionMs: cfg.TRASH_RETENTION, purge }),
        exports,
        imports,
        rewinds,
      }),
    );
  },
});
