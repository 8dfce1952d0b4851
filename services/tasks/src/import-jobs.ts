import type { BlobStore } from "@tasksvc/blobs";
import { importJobs, type keysRpc } from "@tasksvc/contracts";
import { consume, encodeJson, jetstream, nanos, type RpcClient } from "@tasksvc/nats";
import type { DbServiceContext, StreamSpec } from "@tasksvc/runtime";
import { z } from "zod";
import type { Capabilities } from "./domain/attachments/capabilities.js";
import type { MemberLookup } from "./domain/imports/tally.js";
import { importsSystem, type ImportsSystem } from "./domain/imports/system.js";
import type { TasksResources } from "./domain/resources.js";

const GiB = 1024 ** 3;

/** The import settings of TasksConfig. */
export const importSettings = {
  /** The largest import file, in bytes. */
  IMPORT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * GiB)
    .default(GiB),
  /** The longest JSONL line or CSV row, in bytes; a longer one is that line's error. */
  IMPORT_MAX_LINE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(1024 * 1024),
  /** Imports queued or running at once per organization. */
  IMPORT_MAX_ACTIVE: z.coerce.number().int().min(1).max(100).default(2),
};
type ImportSettings = z.output<z.ZodObject<typeof importSettings>> & { UPLOAD_TICKET_TTL: number };

/** Work-queue retention: a job is gone once acknowledged; the imports table says what is unfinished. */
export const importStream = (namespace: string): StreamSpec => ({
  name: importJobs.run.stream(namespace),
  subjects: [importJobs.run.subject(namespace)],
  retention: "workqueue",
  max_age: nanos(7 * 24 * 3600_000),
  duplicate_window: nanos(10 * 60_000),
});

/** Emails are asked of the keys service in its batches of 200. */
function memberLookup(keys: RpcClient<typeof keysRpc>): MemberLookup {
  return async (run, emails) => {
    const all = [...new Set(emails.map((e) => e.toLowerCase()))];
    const found = new Map<string, string>();
    for (let i = 0; i < all.length; i += 200) {
      const { members } = await keys.call("membersByEmail", { organization_id: run.org, emails: all.slice(i, i + 200) }, run.ctx);
      for (const m of members) found.set(m.email.toLowerCase(), m.user_id);
    }
    return found;
  };
}

/** The imports system, its job consumer and its sweep. */
export async function startImports(
  ctx: Pick<DbServiceContext, "nc" | "namespace" | "log" | "every" | "onStop"> & { cfg: ImportSettings },
  o: { res: TasksResources; store: BlobStore; caps: Capabilities; keys: RpcClient<typeof keysRpc> },
): Promise<ImportsSystem> {
  const { nc, namespace, cfg } = ctx;
  const js = jetstream(nc);
  const run = importJobs.run;
  const imports = importsSystem(o.res, {
    store: o.store,
    caps: o.caps,
    uploadTtlMs: cfg.UPLOAD_TICKET_TTL,
    maxBytes: cfg.IMPORT_MAX_BYTES,
    maxLineBytes: cfg.IMPORT_MAX_LINE_BYTES,
    maxUnfinished: cfg.IMPORT_MAX_ACTIVE,
    members: memberLookup(o.keys),
    async queue(job) {
      await js.publish(run.subject(namespace), encodeJson(job), { msgID: run.msgId(job) });
    },
  });
  const jobs = await consume(nc, {
    stream: run.stream(namespace),
    durable: `${namespace}_tasks_imports`,
    schema: run.schema,
    // Each job holds one connection at a time; the per-organization bound keeps one tenant from taking them all.
    concurrency: 4,
    ackWaitMs: 30_000,
    // A job that comes again goes on from the import's recorded line.
    confirmAcks: false,
    log: ctx.log,
    async handle(job, meta) {
      const outcome = await imports.run(job, () => meta.working(), meta.deliveries);
      return outcome === "done" ? "ack" : { nak: outcome.again };
    },
  });
  ctx.onStop(() => {
    imports.stop();
    return jobs.stop();
  });
  ctx.every(60_000, "import sweep", () => imports.sweep());
  return imports;
}
