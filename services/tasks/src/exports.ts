import { tmpdir } from "node:os";
import type { BlobStore } from "@tasksvc/blobs";
import { settings } from "@tasksvc/config";
import { exportJobs, type keysRpc, systemContext } from "@tasksvc/contracts";
import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { consume, encodeJson, jetstream, nanos, type NatsConnection, type RpcClient } from "@tasksvc/nats";
import { z } from "zod";
import type { Capabilities } from "./domain/attachments/capabilities.js";
import { removeOrphans } from "./domain/exports/files.js";
import { exportsSystem, type ExportsSystem } from "./domain/exports/system.js";
import type { TasksResources } from "./domain/resources.js";
import { exportReads } from "./repo/export-reads.js";
import { repositories } from "./repo/repositories.js";

/** The tasks service's settings for exports (docs/operations.md). */
export const exportSettings = {
  /** How long a file and its link last after the export succeeded; S3 signs a link for 7 days at most. */
  EXPORT_TTL: settings.duration("24h").refine((ms) => ms >= 60_000 && ms <= 7 * 24 * 3600_000, "expected a duration between 1m and 7d"),
  /** Exports an organization may have waiting or running at once; one more is refused (409 limit_reached). */
  EXPORTS_PER_ORGANIZATION: z.coerce.number().int().min(1).max(100).default(3),
  /** A run that stops renewing its lease this long is taken over; also the job message's ack wait. */
  EXPORT_LEASE: settings.duration("30s").refine((ms) => ms >= 3000 && ms <= 600_000, "expected a duration between 3s and 10m"),
  /** Where files are written before they go to the blob store: room for the largest export. */
  EXPORT_TMP_DIR: z.string().min(1).default(tmpdir()),
};
type ExportSettings = { [K in keyof typeof exportSettings]: z.output<(typeof exportSettings)[K]> };

export function exportStream(namespace: string) {
  return {
    // Work-queue retention: a job is gone once acknowledged; the exports table keeps its state.
    name: exportJobs.stream(namespace),
    subjects: [exportJobs.subject(namespace)],
    retention: "workqueue" as const,
    max_age: nanos(7 * 24 * 3600_000),
    duplicate_window: nanos(10 * 60_000),
  };
}

export interface ExportWiring {
  db: Database;
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  cfg: ExportSettings;
  res: TasksResources;
  store: BlobStore;
  caps: Capabilities;
  keys: RpcClient<typeof keysRpc>;
  onStop(fn: () => Promise<void> | void): void;
  every(ms: number, what: string, fn: () => Promise<unknown>): void;
}

/**
 * The exports system and its work: a consumer on the work queue taking as many jobs at once as the
 * pool has snapshot connections, a sweep every minute, and the files a killed process left behind.
 */
export async function startExports(w: ExportWiring): Promise<ExportsSystem> {
  const js = jetstream(w.nc);
  const removed = await removeOrphans(w.cfg.EXPORT_TMP_DIR);
  if (removed > 0) w.log.info({ removed }, "removed the temporary files of exports whose process is gone");
  const system = exportsSystem(w.res, {
    store: w.store,
    caps: w.caps,
    snapshot: (fn) => w.db.snapshot((t) => fn({ reads: exportReads(t), repos: repositories(t) })),
    async emails(userIds) {
      const r = await w.keys.call("userEmails", { user_ids: [...userIds] }, systemContext("export"));
      return new Map(r.users.map((u) => [u.id, u.email]));
    },
    tmpDir: w.cfg.EXPORT_TMP_DIR,
    async publish(job) {
      await js.publish(exportJobs.subject(w.namespace), encodeJson(job), { msgID: exportJobs.msgId(job) });
    },
    ttlMs: w.cfg.EXPORT_TTL,
    maxActive: w.cfg.EXPORTS_PER_ORGANIZATION,
    leaseMs: w.cfg.EXPORT_LEASE,
    maxRuns: 5,
    heartbeatMs: 1000,
  });
  const stopping = new AbortController();
  const jobs = await consume(w.nc, {
    stream: exportJobs.stream(w.namespace),
    durable: `${w.namespace}_tasks_exports`,
    schema: exportJobs.schema,
    concurrency: Math.max(1, w.db.snapshotConnections),
    ackWaitMs: w.cfg.EXPORT_LEASE,
    log: w.log,
    handle: (job, meta) => system.run(job, () => meta.working(), stopping.signal),
  });
  // A run in progress stops at its next chunk and is taken over at once by another replica.
  w.onStop(async () => {
    stopping.abort();
    await jobs.stop();
  });
  w.every(60_000, "export sweep", () => system.sweep());
  return system;
}
