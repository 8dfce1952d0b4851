import { type Caller, CreateTaskBody, type Task, type TaskBatchOutcome, type TaskBatchRpcInput, UpdateTaskBody } from "@tasksvc/contracts";
import { type AppError, isAppError, validationError } from "@tasksvc/errors";
import type { z } from "zod";
import type { TasksResources } from "./resources.js";
import type { TasksSystem } from "./tasks.js";

type Item = TaskBatchRpcInput["operations"][number];

/**
 * The key an item's write records under: the batch's key and the item's index. A space cannot
 * occur in an Idempotency-Key (visible ASCII only), so no key a client sends to a single
 * operation can name a batch's item, and a retried batch finds each item's own record.
 */
export const itemKey = (key: string, index: number) => `${key} #${index}`;

/**
 * The most one item's answer can take: a task at its longest (a 500-character title in
 * three-byte characters, 10,000 and 100,000 control characters in description and notes, each
 * written as six bytes, 100 projects, a recurrence) measured 665,102 bytes.
 */
const MAX_TASK_ANSWER = 700 * 1024;
/** What a create's answer adds to its body's own bytes (its id, number, dates, version …). */
const CREATE_ANSWER_OVERHEAD = 4 * 1024;

/**
 * An upper bound of an item's answer in bytes. A create answers its own body's text, escaped as
 * JSON as the request had to escape it, plus its generated fields; any other method answers a
 * task the request does not show, so the largest one.
 */
function answerBound(item: Item): number {
  if (item.method !== "create") return MAX_TASK_ANSWER;
  return Buffer.byteLength(JSON.stringify(item.body ?? null)) + CREATE_ANSWER_OVERHEAD;
}

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

/** A create that may run together with its neighbours: one that names no parent. */
function groupable(item: Item | undefined): boolean {
  if (item?.method !== "create") return false;
  const body = item.body as { parent_task_id?: unknown } | null | undefined;
  return body === null || body === undefined || typeof body !== "object" || body.parent_task_id === undefined || body.parent_task_id === null;
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
 *
 * A run stops before an item whose answer might not fit in one reply (`res.replyBytes`, the
 * service's NATS page budget, under max_payload), and the gateway sends the rest again from
 * there (`offset`).
 */
export function taskBatches(res: TasksResources, { tasks }: { tasks: TasksSystem }) {
  const { replyBytes } = res;
  async function runItem(c: Caller, item: Item, index: number): Promise<{ status: number; task: Task }> {
    const caller: Caller = {
      ...c,
      idempotencyKey: c.idempotencyKey === undefined ? undefined : itemKey(c.idempotencyKey, index),
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
     * Runs the items in order and answers the results of those it ran: all of them, or fewer
     * when the next item's answer might not fit in the reply. An item's result is never dropped
     * once it ran (without an Idempotency-Key, running it again would apply it twice), so the
     * check comes before each item (or group of creates), against an upper bound of its answer;
     * the first item always runs, since one task's answer always fits.
     */
    async run(c: Caller, input: TaskBatchRpcInput): Promise<{ results: TaskBatchOutcome[] }> {
      const results: TaskBatchOutcome[] = [];
      const items = input.operations;
      let bytes = 0;
      for (let i = 0; i < items.length; ) {
        // Consecutive creates go together: submitted in order in one tick, the create batcher puts
        // them in one statement (numbered in that order) instead of one transaction each. A create
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
