import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "./codes.js";
import { FieldError, OpaqueId } from "./common.js";
import { RpcError } from "./rpc.js";
import { Task } from "./tasks.js";

/** The most operations one batch takes. */
export const MAX_BATCH_OPERATIONS = 100;

/**
 * The most request bytes of items one run of a batch carries to the tasks service (at least one
 * item, however large): well under NATS's 1 MiB, with room for the envelope. The tasks service
 * cuts its answer to a run by its own reply budget, and the gateway sends the rest from there.
 */
export const BATCH_RUN_BYTES = 256 * 1024;

/** An If-Match header value: `*`, or entity tags such as `"3"` separated by commas. */
export const IF_MATCH_VALUE = /^\s*(?:\*|(?:W\/)?"[\x21\x23-\x7E\x80-\xFF]*"(?:\s*,\s*(?:W\/)?"[\x21\x23-\x7E\x80-\xFF]*")*)\s*$/;

const BatchTaskId = OpaqueId.meta({ description: "The task's id (T-<n>), as in the single operation's path.", examples: ["T-1"] });

// Item bodies are checked by the tasks service, item by item, so that one bad body fails its own
// item only: here a body is any JSON object.
const ItemBody = (operation: string) =>
  z.record(z.string(), z.unknown()).meta({
    description: `The body ${operation} takes, checked as that operation checks it (a failure is this item's 400).`,
    examples: [{ title: "Write the announcement" }],
  });

const IfMatch = z
  .string()
  .regex(IF_MATCH_VALUE, { message: 'must be * or one or more entity tags such as "3", separated by commas' })
  .optional()
  .meta({ description: "As the If-Match header of the single operation: the write goes on only at this version (ETag).", examples: ['"3"'] });

export const TaskBatchOperation = z.discriminatedUnion("method", [
  z.strictObject({
    method: z.literal("create").meta({ description: "Create a task, as POST /v1/tasks.", examples: ["create"] }),
    body: ItemBody("POST /v1/tasks"),
  }),
  z.strictObject({
    method: z.literal("update").meta({ description: "Update a task, as PATCH /v1/tasks/{task_id}.", examples: ["update"] }),
    task_id: BatchTaskId,
    body: ItemBody("PATCH /v1/tasks/{task_id}"),
    if_match: IfMatch,
  }),
  z.strictObject({
    method: z.literal("archive").meta({ description: "Archive a task, as POST /v1/tasks/{task_id}/archive.", examples: ["archive"] }),
    task_id: BatchTaskId,
    if_match: IfMatch,
  }),
  z.strictObject({
    method: z.literal("unarchive").meta({ description: "Unarchive a task, as POST /v1/tasks/{task_id}/unarchive.", examples: ["unarchive"] }),
    task_id: BatchTaskId,
    if_match: IfMatch,
  }),
]);
export type TaskBatchOperation = z.infer<typeof TaskBatchOperation>;

export const TaskBatchBody = z.strictObject({
  operations: z
    .array(TaskBatchOperation)
    .min(1)
    .max(MAX_BATCH_OPERATIONS)
    .meta({
      description: `1 to ${MAX_BATCH_OPERATIONS} task writes, run in this order; one that fails does not stop the others.`,
      examples: [[{ method: "update", task_id: "T-1", body: { status: "DONE" } }]],
    }),
});
export type TaskBatchBody = z.infer<typeof TaskBatchBody>;

/** A problem object as the single operation would have answered it (see the Problem schema). */
const ItemProblem = z.object({
  type: z.string().meta({ description: "URL of the code's entry on the errors page.", examples: ["https://api.example.com/docs/errors#resource_not_found"] }),
  title: z.string().meta({ description: "A short, human summary of the code.", examples: ["Resource not found"] }),
  status: z
    .number()
    .int()
    .meta({ description: "The HTTP status, repeated.", examples: [404] }),
  code: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]).meta({ description: "The stable, machine-readable error code.", examples: ["resource_not_found"] }),
  detail: z.string().meta({ description: "What went wrong with this item, for a person.", examples: ["No task with that id exists in this organization."] }),
  errors: z
    .array(FieldError)
    .optional()
    .meta({ description: "Field errors, each with an RFC 6901 pointer into the item's body", examples: [[{ pointer: "/title", message: "is required" }]] }),
});

export const TaskBatchResult = z.object({
  status: z
    .number()
    .int()
    .meta({ description: "The status the single operation would have answered (201 for a create, 200, or the error's).", examples: [200] }),
  etag: z
    .string()
    .optional()
    .meta({ description: "The ETag header the single operation would have sent: the task's version (also on a 412).", examples: ['"2"'] }),
  body: z.union([Task, ItemProblem]).meta({ description: "What the single operation would have answered: the task, or a problem.", examples: [] }),
});

export const TaskBatchResponse = z.object({
  results: z.array(TaskBatchResult).meta({ description: "One result per operation, in the same order.", examples: [] }),
});

/** One item's outcome from the tasks service: the task, or the error the single operation would have answered. */
export const TaskBatchOutcome = z.union([z.object({ status: z.number().int(), task: Task }), z.object({ status: z.number().int(), error: RpcError })]);
export type TaskBatchOutcome = z.infer<typeof TaskBatchOutcome>;

/**
 * The tasks service's batch operation: a run of a batch's items from `offset` (their index in the
 * batch; up to BATCH_RUN_BYTES of them), If-Match values already parsed to entity tags by the
 * gateway. It answers the results of a prefix of them (at least one): as many as keep its reply
 * well under the NATS message limit; the gateway sends the rest again.
 */
export const TaskBatchRpcInput = z.object({
  offset: z
    .number()
    .int()
    .min(0)
    .max(MAX_BATCH_OPERATIONS - 1),
  operations: z
    .array(
      z.object({
        method: z.enum(["create", "update", "archive", "unarchive"]),
        task_id: OpaqueId.optional(),
        body: z.unknown().optional(),
        if_match: z.array(z.string()).optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_OPERATIONS),
});
export type TaskBatchRpcInput = z.infer<typeof TaskBatchRpcInput>;
