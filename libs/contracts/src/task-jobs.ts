import { z } from "zod";

/** Background work of the tasks service on a JetStream work queue: a job is gone once acknowledged. */
export const RemovalJob = z.object({
  organization_id: z.string().min(1),
  kind: z.enum(["label", "field", "option"]),
  ref: z.string().min(1),
});
export type RemovalJob = z.infer<typeof RemovalJob>;

export const taskJobs = {
  removal: {
    stream: (namespace: string) => `${namespace}_task_jobs`,
    subject: (namespace: string) => `${namespace}.cmd.tasks.removal`,
    schema: RemovalJob,
    /** Published again by a sweep while the removal is pending: the duplicate window keeps one job at a time. */
    msgId: (j: RemovalJob) => `removal.${j.organization_id}.${j.kind}.${j.ref}`,
  },
} as const;
