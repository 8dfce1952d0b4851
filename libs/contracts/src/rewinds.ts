import { z } from "zod";
import { CreatedAt, EXAMPLE_INSTANT, Label, OpaqueId, Timestamp } from "./common.js";
import { TaskChanges } from "./tasks.js";

// Rewind: what an organization's tasks were at an instant, and the undo of what one credential, request or batch wrote.

const REWIND_ID = "rwd_3pK8xQ2mT7nL9vD4bR5sW6";

/** An instant with its offset: a bare date would be a surprising midnight for a point in time. */
export const Instant = z.iso.datetime({ offset: true, error: "must be a date-time with an offset, such as 2026-11-22T09:00:00Z" });

export const AS_OF = {
  description:
    "The instant to read the task as it stood then (date-time with an offset, such as `2026-11-23T09:30:00Z`), from its immutable versions: content fields as they were; `archived` and `parent_task_id` as they are now (not recorded in versions).",
};
export const GetTaskQuery = z.strictObject({ as_of: Instant.optional().meta(AS_OF) });

/** The most tasks one rewind may touch; a match over more is refused, to be narrowed. */
export const REWIND_MAX_TASKS = 10_000;
/** The most items an answer lists (and its byte budget below): `counts` always counts every task. */
export const REWIND_MAX_ITEMS = 1_000;
export const REWIND_ITEMS_BYTES = 512 * 1024;

export const RewindMatch = z
  .strictObject({
    credential_id: OpaqueId.optional().meta({
      description: "The writes of this credential: an API key's id (`key_…`), an OAuth client's id (`oac_…`) or a user's id for a user token.",
      examples: ["key_5vN5Zu6nSVCjmB2jJBpwRY"],
    }),
    request_id: Label.min(1)
      .max(200)
      .optional()
      .meta({ description: "The writes of one request: its `X-Request-Id`.", examples: ["req_4nK8xQ2mT7pL9vD3bR5sW6"] }),
    batch_key: Label.min(1)
      .max(255)
      .optional()
      .meta({ description: "The items of one batch: the Idempotency-Key `POST /v1/tasks/batch` was sent with.", examples: ["import-2026-11-23"] }),
    since: Instant.meta({ description: "Only writes at or after this instant (required).", examples: ["2026-11-23T09:00:00Z"] }),
    until: Instant.optional().meta({ description: "Only writes before this instant (default: now).", examples: ["2026-11-23T10:00:00Z"] }),
  })
  .superRefine((m, ctx) => {
    if (m.credential_id === undefined && m.request_id === undefined && m.batch_key === undefined) {
      ctx.addIssue({ code: "custom", path: ["credential_id"], message: "give at least one of credential_id, request_id and batch_key" });
    }
    if (m.until !== undefined && Date.parse(m.until) <= Date.parse(m.since)) {
      ctx.addIssue({ code: "custom", path: ["until"], message: "must be after since" });
    }
  })
  .meta({
    description: "Which writes to undo: all the given keys must match (at least one of the three ids), within [since, until).",
    examples: [{ credential_id: "key_5vN5Zu6nSVCjmB2jJBpwRY", since: "2026-11-23T09:00:00Z" }],
  });
export type RewindMatch = z.infer<typeof RewindMatch>;

export const CreateRewindBody = z.strictObject({
  match: RewindMatch,
  dry_run: z
    .boolean()
    .default(true)
    .meta({ description: "Only plan (the default): answer what the undo would do and change nothing.", examples: [true] }),
});
export type CreateRewindBody = z.infer<typeof CreateRewindBody>;

export const REWIND_ACTIONS = ["revert", "trash", "skip"] as const;
export const REWIND_REASONS = ["changed_since", "in_trash", "has_subtasks"] as const;

export const RewindItem = z.object({
  task_id: z.string().meta({ description: "The task's id (T-<n>).", examples: ["T-42"] }),
  action: z.enum(REWIND_ACTIONS).meta({
    description:
      "`revert`: a new version restores the fields the matching writes changed; `trash`: the matching writes created the task, it goes to the trash; `skip`: nothing to do (see `reason`).",
    examples: ["revert"],
  }),
  reason: z
    .enum(REWIND_REASONS)
    .nullable()
    .meta({
      description:
        "Why a task is skipped: `changed_since` (a write the match does not cover changed each field since), `in_trash` (the task is in the trash now), `has_subtasks` (a task to trash has subtasks the match did not create). Null otherwise.",
      examples: [null],
    }),
  from_version: z.int().meta({ description: "The task's version before the undo.", examples: [7] }),
  to_version: z
    .int()
    .nullable()
    .meta({ description: "The version the undo wrote; null for a skip, a trash or a dry run.", examples: [8] }),
  changes: TaskChanges.meta({
    description: "For each field restored: `{ from, to }` (now, and as it was before the first matching write); empty for a trash or a skip.",
    examples: [{ status: { from: "COMPLETED", to: "TODO" } }],
  }),
});
export type RewindItem = z.infer<typeof RewindItem>;

export const RewindCounts = z
  .object({
    reverted: z.int().meta({ description: "Tasks given a version restoring their fields (or that would be, in a dry run).", examples: [3] }),
    trashed: z.int().meta({ description: "Tasks sent to the trash (or that would be).", examples: [1] }),
    skipped: z.int().meta({ description: "Tasks left alone.", examples: [1] }),
  })
  .meta({ description: "Every task the rewind planned or did, by action.", examples: [{ reverted: 3, trashed: 1, skipped: 1 }] });

export const Rewind = z.object({
  id: z.string().meta({ description: "The rewind's id: the `actor.id` of the versions it writes.", examples: [REWIND_ID] }),
  status: z.enum(["running", "succeeded", "failed"]).meta({ description: "A dry run is `succeeded` at once.", examples: ["succeeded"] }),
  dry_run: z.boolean().meta({ description: "Whether it only planned.", examples: [true] }),
  match: RewindMatch,
  items: z.array(RewindItem).meta({
    description: `Per task, by task id: at most ${REWIND_MAX_ITEMS} items and about ${REWIND_ITEMS_BYTES / 1024} KiB; \`items_truncated\` says when more tasks were planned than listed (\`counts\` counts them all).`,
    examples: [[{ task_id: "T-42", action: "revert", reason: null, from_version: 7, to_version: 8, changes: { status: { from: "COMPLETED", to: "TODO" } } }]],
  }),
  items_truncated: z.boolean().meta({ description: "Whether `items` lists fewer tasks than the counts.", examples: [false] }),
  counts: RewindCounts,
  error: z
    .string()
    .nullable()
    .meta({ description: "Why a rewind failed; null otherwise.", examples: [null] }),
  created_at: CreatedAt,
  completed_at: Timestamp.nullable().meta({ description: "When it finished (UTC, ISO 8601); null while running.", examples: [EXAMPLE_INSTANT] }),
});
export type Rewind = z.infer<typeof Rewind>;

export const RewindParams = z.object({ rewind_id: OpaqueId.meta({ description: "The rewind's id.", examples: [REWIND_ID] }) });

export const rewindOps = {
  createRewind: { input: CreateRewindBody, output: Rewind, timeoutMs: 30_000 },
  getRewind: { input: RewindParams, output: Rewind },
} as const;

/** The work of a large undo, on a JetStream work queue: the rewinds row says what is left to do. */
export const RewindJob = z.object({ organization_id: z.string().min(1), rewind_id: z.string().min(1) });
export type RewindJob = z.infer<typeof RewindJob>;

export const rewindJobs = {
  stream: (namespace: string) => `${namespace}_task_rewinds`,
  subject: (namespace: string) => `${namespace}.cmd.tasks.rewind`,
  schema: RewindJob,
  msgId: (j: RewindJob) => `rewind.${j.rewind_id}`,
} as const;
