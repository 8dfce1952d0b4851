import { type Caller, CreateTaskBody, type Task, type TaskBatchOutcome, type TaskBatchRpcInput, UpdateTaskBody } from "@tasksvc/contracts";
import { type AppError, isAppError, validationError } from "@tasksvc/errors";
import type { z } from "zod";
import type { TasksService } from "./tasks-service.js";

type Item = TaskBatchRpcInput["operations"][number];

/**
 * The key an item's write records under: the batch's key and the item's index. A space cannot
 * occur in an Idempotency-Key (visible ASCII only), so no key a client sends to a single
 * operation can name a batch's item, and a retried batch finds each item's own record.
 */
export const itemKey = (key: string, index: number) => `${key} #${index}`;

/**
 * Where a run of items stops answering more: NATS refuses a message over its max_payload (1 MiB
 * by default), and one task's answer can reach about 350 kB (notes, description and title at
 * their longest, in three-byte characters), so a reply stays under about 600 kB.
 */
const REPLY_BUDGET = 256 * 1024;

/** The body as the single operation's schema parses it, or its 400 with pointers into this body. */
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

/**
 * POST /v1/tasks/batch. Each item runs through the same service call as its single operation
 * (createTask, updateTask, setArchived), so its checks, events, history and idempotency record
 * are that operation's: there is no second implementation of a write to drift. Items run one
 * after the other, in order, each in its own transaction (a later item sees what an earlier one
 * wrote), and an item that fails with an error the client caused (4xx) is answered in its place
 * without stopping the others.
 *
 * Anything else (the database gone, a 5xx) fails the whole batch: its outcome is unknown, the
 * gateway gives the Idempotency-Key back, and a retry with the key replays every item already
 * applied from that item's own record instead of applying it again.
 */
/** A create that may run together with its neighbours: one that names no parent. */
function groupable(item: Item | undefined): boolean {
  if (item?.method !== "create") return false;
  const body = item.body as { parent_task_id?: unknown } | null | undefined;
  return body === null || body === undefined || typeof body !== "object" || body.parent_task_id === undefined || body.parent_task_id === null;
}

export function taskBatches(svc: TasksService) {
  async function runItem(c: Caller, item: Item, index: number): Promise<{ status: number; task: Task }> {
    const caller: Caller = {
      ...c,
      idempotencyKey: c.idempotencyKey === undefined ? undefined : itemKey(c.idempotencyKey, index),
      ifMatch: item.if_match,
    };
    switch (item.method) {
      case "create":
        return { status: 201, task: await svc.createTask(caller, parseBody(CreateTaskBody, item.body)) };
      case "update": {
        const ref = taskRef(item);
        return { status: 200, task: await svc.updateTask(caller, ref, parseBody(UpdateTaskBody, item.body)) };
      }
      case "archive":
        return { status: 200, task: await svc.setArchived(caller, taskRef(item), true) };
      case "unarchive":
        return { status: 200, task: await svc.setArchived(caller, taskRef(item), false) };
    }
  }

  return {
    /**
     * Runs the items in order and answers the results of those it ran: all of them, or fewer
     * once the reply reaches REPLY_BUDGET bytes. An item's result is never dropped once it ran
     * (without an Idempotency-Key, running it again would apply it twice), so the check comes
     * after each item and the budget leaves room for one more of the largest task.
     */
    async run(c: Caller, input: TaskBatchRpcInput): Promise<{ results: TaskBatchOutcome[] }> {
      const results: TaskBatchOutcome[] = [];
      const items = input.operations;
      let bytes = 0;
      for (let i = 0; i < items.length; ) {
        // Consecutive creates go together: submitted in order in one tick, the create batcher puts
        // them in one statement (numbered in that order) instead of one transaction each. A create
        // that names a parent waits for the items before it (its parent may be one of them).
        let end = i + 1;
        if (groupable(items[i])) while (end < items.length && groupable(items[end])) end++;
        const settled = await Promise.allSettled(items.slice(i, end).map((item, k) => runItem(c, item, input.offset + i + k)));
        for (const s of settled) {
          if (s.status === "rejected" && (!isAppError(s.reason) || s.reason.status >= 500)) throw s.reason;
          const outcome: TaskBatchOutcome = s.status === "fulfilled" ? s.value : { status: s.reason.status, error: (s.reason as AppError).toRpc() };
          results.push(outcome);
          bytes += Buffer.byteLength(JSON.stringify(outcome));
        }
        // The gateway's runs bound a group's size (~256 KiB of request), so a reply stays in bounds.
        if (bytes >= REPLY_BUDGET) break;
        i = end;
      }
      return { results };
    },
  };
}
export type TaskBatches = ReturnType<typeof taskBatches>;
