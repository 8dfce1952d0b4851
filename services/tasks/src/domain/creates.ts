import type { CreateTaskBody, Task } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { AppError, isAppError } from "@tasksvc/errors";
import { toTask, type Content, type TasksRepo } from "../repo/tasks-repo.js";
import type { Caller, TasksDeps } from "./tasks-service.js";

/** Checks one create against the database (projects, parent) and returns its first version. */
export type Prepare = (r: TasksRepo, c: Caller, b: CreateTaskBody) => Promise<Content>;

interface Pending {
  caller: Caller;
  body: CreateTaskBody;
  resolve(t: Task): void;
  reject(e: unknown): void;
}

/** The most creates one transaction takes. */
const MAX_BATCH = 64;

const keyOf = (credentialId: string, key: string) => `${credentialId}\u0000${key}`;

/**
 * Group commit for task creation (decision 0008). Task numbers come from one counter row per
 * organization, locked from the number's allocation to the commit, so creates of one organization
 * are serialized by Postgres however many connections wait. Instead of queueing 50 transactions
 * on that lock, each replica runs at most one create transaction per organization at a time and
 * puts every create that arrived meanwhile into the next one: one counter bump, one multi-row
 * insert, one commit for all of them. Numbers stay gap-free (a rolled-back batch gives its numbers
 * back) and every create is durable before it is answered.
 *
 * A create that fails its own checks (unknown project or parent) is answered with its error and
 * left out; anything else that fails a batch re-runs its creates one by one, so one bad create
 * never fails its neighbours.
 */
export function createBatcher(deps: TasksDeps, prepare: Prepare) {
  const queues = new Map<string, Pending[]>();

  async function run(org: string, queue: Pending[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      if (batch.length === 1) await executeAlone(batch[0]!);
      else {
        try {
          await execute(org, batch);
        } catch {
          for (const p of batch) await executeAlone(p);
        }
      }
    }
    queues.delete(org);
  }

  async function executeAlone(p: Pending): Promise<void> {
    try {
      await execute(p.caller.organizationId, [p]);
    } catch (e) {
      if (e instanceof LostRace) {
        // Another execution recorded this key while ours ran: answer with its result.
        try {
          const stored = await deps.repo.storedResults([{ credentialId: p.caller.credentialId, key: p.caller.idempotencyKey! }]);
          const s = stored.get(keyOf(p.caller.credentialId, p.caller.idempotencyKey!));
          if (s) return p.resolve(s.result as Task);
        } catch (err) {
          return p.reject(err);
        }
      }
      p.reject(e);
    }
  }

  /** One transaction for the batch. Settles every create, or throws with none settled. */
  async function execute(org: string, batch: Pending[]): Promise<void> {
    const settled: Array<() => void> = [];
    await deps.tx(async (r) => {
      // A create alone first looks for its stored result (a retry the gateway could not answer).
      // A batch does not: the gateway answers retries, and a key recorded meanwhile makes the
      // batch fail at emitAndRecord, after which each create runs alone.
      const keyed = batch.length === 1 ? batch.filter((p) => p.caller.idempotencyKey !== undefined) : [];
      const stored = await r.storedResults(keyed.map((p) => ({ credentialId: p.caller.credentialId, key: p.caller.idempotencyKey! })));
      const accepted: Array<{ p: Pending; content: Content }> = [];
      for (const p of batch) {
        const s = p.caller.idempotencyKey === undefined ? undefined : stored.get(keyOf(p.caller.credentialId, p.caller.idempotencyKey));
        if (s) {
          if (s.operation !== "createTask") settled.push(() => p.reject(new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request.")));
          else settled.push(() => p.resolve(s.result as Task));
          continue;
        }
        try {
          accepted.push({ p, content: await prepare(r, p.caller, p.body) });
        } catch (e) {
          if (!isAppError(e)) throw e;
          settled.push(() => p.reject(e));
        }
      }
      if (accepted.length === 0) return;
      // The counter row is locked from here to the commit: after every check.
      const rows = await r.insertTasks(org, accepted.map((a) => ({ owner: a.p.caller.userId, content: a.content, versionId: newId("ver") })));
      const tasks = rows.map(toTask);
      const records = accepted.flatMap((a, i) =>
        a.p.caller.idempotencyKey === undefined ? [] : [{ credentialId: a.p.caller.credentialId, key: a.p.caller.idempotencyKey, operation: "createTask", result: tasks[i] }],
      );
      const recorded = await r.emitAndRecord(org, tasks.map((task) => ({ type: "task.created" as const, task })), records);
      if (recorded.size !== records.length) throw new LostRace();
      accepted.forEach((a, i) => settled.push(() => a.p.resolve(tasks[i]!)));
    });
    deps.written();
    for (const s of settled) s();
  }

  return {
    submit(caller: Caller, body: CreateTaskBody): Promise<Task> {
      return new Promise<Task>((resolve, reject) => {
        const org = caller.organizationId;
        const queue = queues.get(org);
        const p = { caller, body, resolve, reject };
        if (queue) queue.push(p);
        else {
          const q = [p];
          queues.set(org, q);
          void run(org, q);
        }
      });
    },
  };
}

/** An idempotency key of the batch was recorded by another execution first. */
class LostRace extends Error {}
