import { rewindJobs } from "@tasksvc/contracts";
import { consume, encodeJson, jetstream, nanos } from "@tasksvc/nats";
import type { DbServiceContext, StreamSpec } from "@tasksvc/runtime";
import type { TasksResources } from "./domain/resources.js";
import { type RewindsSystem, rewindsSystem } from "./domain/rewinds.js";

/** Work-queue retention: a job is gone once acknowledged; the rewinds table says what is unfinished. */
export const rewindStream = (namespace: string): StreamSpec => ({
  name: rewindJobs.stream(namespace),
  subjects: [rewindJobs.subject(namespace)],
  retention: "workqueue",
  max_age: nanos(7 * 24 * 3600_000),
  duplicate_window: nanos(10 * 60_000),
});

/** The rewinds system, the consumer of its large undos and their sweep. */
export async function startRewinds(
  ctx: Pick<DbServiceContext, "nc" | "namespace" | "log" | "every" | "onStop">,
  o: { res: TasksResources; retentionMs: number },
): Promise<RewindsSystem> {
  const { nc, namespace } = ctx;
  const js = jetstream(nc);
  const rewinds = rewindsSystem(o.res, {
    retentionMs: o.retentionMs,
    async queue(job, attempt) {
      // The attempt in the id: a job queued again by the sweep is not dropped as a duplicate of the first.
      await js.publish(rewindJobs.subject(namespace), encodeJson(job), { msgID: `${rewindJobs.msgId(job)}.${attempt}` });
    },
  });
  const jobs = await consume(nc, {
    stream: rewindJobs.stream(namespace),
    durable: `${namespace}_tasks_rewinds`,
    schema: rewindJobs.schema,
    concurrency: 2,
    ackWaitMs: 30_000,
    // A job that comes again goes on with the tasks its rewind has no item for.
    confirmAcks: false,
    log: ctx.log,
    async handle(job, meta) {
      await rewinds.run(job, () => meta.working(), meta.deliveries);
      return "ack";
    },
  });
  ctx.onStop(() => jobs.stop());
  ctx.every(60_000, "rewind sweep", () => rewinds.sweep());
  return rewinds;
}
