import { type Caller, CreateTaskBody, type Task, type TaskBatchOutcome, type TaskBatchRpcInput, UpdateTaskBody } from "@tasksvc/contracts";
import { type AppError, isAppError, validationError } from "@tasksvc/errors";
import type { z } from "zod";
import type { TasksResources } from "./resources.js";
import type { WriteCaller } from "./stamps.js";
import type { TasksSystem } from "./tasks.js";

type Item = TaskBatchRpcInput["operations"][number];

/**
 * A space cannot occur in an Idempotency-Key, so no key a client sends to a single operation can
 * name a batch's item, and a retried batch finds each item's own record.
 */
export const itemKey = (key: string, index: number) => `${key} #${index}`;

/** A task at its longest (title, description and notes of escaped control characters, 100 projects, a recurrence) measured 665,102 bytes. */
const MAX_TASK_ANSWER = 700 * 1024;
const CREATE_ANSWER_OVERHEAD = 4 * 1024;

/** A create answers its own body's text plus its generated fields; any other method a task the request does not show, so the largest. */
function answerBound(item: Item): number {
  if (item.method !== "create") return MAX_TASK_ANSWER;
  return Buffer.byteLength(JSON.stringify(item.body ?? null)) + CREATE_ANSWER_OVERHEAD;
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (!r.success) throw validationError(r.error, "", "The request body");
  return r.data;
}

function taskRef(item: Item): string {
  // The gateway's envelope requires task_id on every method but create.
  if (item.task_id === undefined) throw new Error(`a batch ${item.method} without task_id`);
  return item.task_id;
}

function groupable(item: Item | undefined): boolean {
  if (item?.method !== "create") return false;
  const body = item.body as { parent_task_id?: unknown } | null | undefined;
  return body === null || body === undefined || typeof body !== "object" || body.parent_task_id === undefined || body.parent_task_id === null;
}

/**
 * Each item runs through its single operation's call, so there is no second implementation of a
 * write to drift. A 4xx is answered in its item's place; anything else fails the whole batch, and
 * a retry with the key replays each item already applied from its own record (decision 0026).
 */
export function taskBatches(res: TasksResources, { tasks }: { tasks: TasksSystem }) {
  const { replyBytes } = res;
  async function runItem(c: Caller, item: Item, index: number): Promise<{ status: number; task: Task }> {
    const caller: WriteCaller = {
      ...c,
      idempotencyKey: c.idempotencyKey === undefined ? undefined : itemKey(c.idempotencyKey, index),
      batchKey: c.idempotencyKey,
      ifMatch: item.if_match,
    };
    switch (item.method) {
      case "create":
        return { status: 201, task: await tasks.createTask(caller, parseBody(CreateTaskBody, item.body)) };
      case "update": {
        const ref = taskRef(item);
        return { status: 200, task: await tasks.updateTask(caller, ref, parseBody(UpdateTaskBody, item.body)) };
      }
      case "archive":
        return { status: 200, task: await tasks.setArchived(caller, taskRef(item), true) };
      case "unarchive":
        return { status: 200, task: await tasks.setArchived(caller, taskRef(item), false) };
    }
  }

  return {
    /**
     * An item's result is never dropped once it ran (without an Idempotency-Key, running it again
     * would apply it twice), so the reply's byte budget is checked before each item, against an upper
     * bound of its answer; the first always runs, since one task's answer always fits.
     */
    async run(c: Caller, input: TaskBatchRpcInput): Promise<{ results: TaskBatchOutcome[] }> {
      const results: TaskBatchOutcome[] = [];
      const items = input.operations;
      let bytes = 0;
      for (let i = 0; i < items.length; ) {
        // Consecutive creates go together, so the create batcher puts them in one statement. A create
        // that names a parent waits for the items before it (its parent may be one of them).
        const first = items[i];
        if (first === undefined) break;
        let end = i + 1;
        let bound = answerBound(first);
        if (results.length > 0 && bytes + bound > replyBytes) break;
        if (groupable(first))
          while (end < items.length && groupable(items[end])) {
            const next = answerBound(items[end] as Item);
            if (bytes + bound + next > replyBytes) break;
            bound += next;
            end++;
          }
        const settled = await Promise.allSettled(items.slice(i, end).map((item, k) => runItem(c, item, input.offset + i + k)));
        for (const s of settled) {
          if (s.status === "rejected" && (!isAppError(s.reason) || s.reason.status >= 500)) throw s.reason;
          const outcome: TaskBatchOutcome = s.status === "fulfilled" ? s.value : { status: s.reason.status, error: (s.reason as AppError).toRpc() };
          results.push(outcome);
          bytes += Buffer.byteLength(JSON.stringify(outcome));
        }
        i = end;
      }
      return { results };
    },
  };
}
export type TaskBatches = ReturnType<typeof taskBatches>;
