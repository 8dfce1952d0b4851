import type { CreateTaskBody, Task } from "@tasksvc/contracts";
import { isPgError, isUniqueViolation, newId, PG } from "@tasksvc/db";
import { AppError, fieldError, isAppError } from "@tasksvc/errors";
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

/** The most creates one statement takes. */
const MAX_BATCH = 64;

const keyOf = (credentialId: string, key: string) => `${credentialId}\u0000${key}`;

/** An idempotency key of the batch was recorded by another execution first. */
class LostRace extends Error {}

/**
 * Group commit for task creation (decision 0008). Task numbers come from one counter row per
 * organization, locked from the number's allocation to the commit, so creates of one organization
 * are serialized by Postgres however many connections wait. Instead of queueing transactions on
 * that lock, each replica runs at most one create statement per organization at a time and puts
 * every create that arrived meanwhile into the next one: one counter bump, one multi-row insert
 * of tasks, versions, links, outbox rows and idempotency records, one commit, one round trip.
 * Numbers stay gap-free (a failed statement gives its numbers back) and every create is durable
 * before it is answered.
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
          const s = (await deps.repo.storedResults([{ credentialId: p.caller.credentialId, key: p.caller.idempotencyKey! }])).get(keyOf(p.caller.credentialId, p.caller.idempotencyKey!));
          if (s) return s.operation === "createTask" ? p.resolve(s.result as Task) : p.reject(reused());
        } catch (err) {
          return p.reject(err);
        }
      }
      p.reject(e);
    }
  }

  const reused = () => new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request.");

  /** Runs one batch. Settles every create, or throws with none settled. */
  async function execute(org: string, batch: Pending[]): Promise<void> {
    const r = deps.repo;
    const settled: Array<() => void> = [];
    // A create alone first looks for its stored result (a retry the gateway could not answer). A
    // batch does not: the gateway answers retries, and a key recorded meanwhile fails the batch's
    // statement, after which each create runs alone.
    if (batch.length === 1 && batch[0]!.caller.idempotencyKey !== undefined) {
      const { credentialId } = batch[0]!.caller;
      const key = batch[0]!.caller.idempotencyKey;
      await r.dropExpiredKey(credentialId, key);
      const s = (await r.storedResults([{ credentialId, key }])).get(keyOf(credentialId, key));
      if (s) return s.operation === "createTask" ? batch[0]!.resolve(s.result as Task) : batch[0]!.reject(reused());
    }
    const accepted: Array<{ p: Pending; content: Content }> = [];
    for (const p of batch) {
      try {
        accepted.push({ p, content: await prepare(r, p.caller, p.body) });
      } catch (e) {
        if (!isAppError(e)) throw e;
        settled.push(() => p.reject(e));
      }
    }
    if (accepted.length > 0) {
      let rows;
      try {
        rows = await r.createTasks(
          org,
          accepted.map((a) => ({
            owner: a.p.caller.userId,
            content: a.content,
            versionId: newId("ver"),
            eventId: newId("evt"),
            credentialId: a.p.caller.idempotencyKey === undefined ? null : a.p.caller.credentialId,
            key: a.p.caller.idempotencyKey ?? null,
          })),
        );
      } catch (e) {
        if (isUniqueViolation(e, "idempotency_pkey")) throw new LostRace();
        // A project or parent that vanished between the check and the insert.
        if (batch.length === 1 && isPgError(e) && e.code === PG.foreignKeyViolation) {
          throw fieldError(e.constraint_name?.startsWith("task_projects") ? "/project_id" : "/parent_task_id", "no longer exists in this organization");
        }
        throw e;
      }
      deps.written();
      accepted.forEach((a, i) => settled.push(() => a.p.resolve(toTask(rows[i]!))));
    }
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
