import type { Caller, CreateTaskBody, Task } from "@tasksvc/contracts";
import { KeyRecordedMeanwhile, newId } from "@tasksvc/db";
import { fieldError, isAppError } from "@tasksvc/errors";
import { contextFromTraceparent, currentTraceparent, inSpan, SpanKind, trace } from "@tasksvc/telemetry";
import type { Repositories } from "../repo/repositories.js";
import { type Content, type TaskRow, toTask } from "../repo/task-json.js";
import { type FieldStamp, ReferenceVanished } from "../repo/task-create.js";
import type { TasksResources } from "./resources.js";
import { stampOf, type WriteCaller } from "./stamps.js";

/** The content, and the custom field definitions its values were checked against (held unchanged to the insert). */
export type Prepare = (r: Repositories, c: Caller, b: CreateTaskBody) => Promise<{ content: Content; fieldsSeen: FieldStamp[] }>;

interface Pending {
  caller: WriteCaller;
  body: CreateTaskBody;
  traceparent: string | null;
  resolve(t: Task): void;
  reject(e: unknown): void;
}

const MAX_BATCH = 64;
const VANISHED_AT = { project: "/project_id", parent: "/parent_task_id", label: "/label_ids", "custom field": "/custom_fields" } as const;

/**
 * Group commit (decision 0008): a create holds its organization's number counter to the commit,
 * so instead of queueing transactions on that lock each replica runs one create statement per
 * organization at a time, holding every create that arrived meanwhile. A create that fails its
 * own checks is left out; anything else re-runs the batch's creates one by one, so one bad create
 * never fails its neighbours.
 */
export function createBatcher(res: TasksResources, prepare: Prepare) {
  const queues = new Map<string, Pending[]>();

  async function run(org: string, queue: Pending[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      const alone = batch.length === 1 ? batch[0] : undefined;
      if (alone) await executeAlone(alone);
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

  /**
   * A keyed create goes straight to its statement, whose plain insert of the key fails when the key
   * is recorded: a first execution (nearly every one) is one round trip, and only a retry (or a
   * refusal) pays a second. A record found live is the answer; one past its 24 hours is dropped
   * and the create runs again, once.
   */
  async function executeAlone(p: Pending): Promise<void> {
    const { organizationId, credentialId, idempotencyKey: key } = p.caller;
    const records = res.repos.idempotency;
    let refused: unknown;
    try {
      await execute(organizationId, [p]);
      return;
    } catch (e) {
      if (key === undefined || !(e instanceof KeyRecordedMeanwhile || isAppError(e))) return p.reject(e);
      if (isAppError(e)) refused = e;
    }
    try {
      const stored = await records.replayOrDropExpired<Task>(credentialId, key, "createTask");
      if (stored !== undefined) return p.resolve(stored);
      if (refused !== undefined) return p.reject(refused);
      await execute(organizationId, [p]);
    } catch (e) {
      // Another execution recorded this key while ours ran: its result is the answer.
      try {
        p.resolve(await records.replayRecordedMeanwhile<Task>(e, credentialId, key, "createTask"));
      } catch (err) {
        p.reject(err);
      }
    }
  }

  /** Settles every create, or throws with none settled. */
  async function execute(org: string, batch: Pending[]): Promise<void> {
    const r = res.repos;
    const settled: Array<() => void> = [];
    const accepted: Array<{ p: Pending; content: Content; fieldsSeen: FieldStamp[] }> = [];
    for (const p of batch) {
      try {
        accepted.push({ p, ...(await prepare(r, p.caller, p.body)) });
      } catch (e) {
        if (!isAppError(e)) throw e;
        // A keyed create refused by a check may be the retry of one that passed it: alone, its
        // record is looked for before the refusal is the answer.
        if (p.caller.idempotencyKey !== undefined) {
          if (batch.length === 1) throw e;
          settled.push(() => void executeAlone(p));
        } else settled.push(() => p.reject(e));
      }
    }
    if (accepted.length > 0) {
      let rows: TaskRow[];
      try {
        const items = accepted.map((a) => ({
          owner: a.p.caller.userId,
          actor: a.p.caller.userId,
          by: stampOf(a.p.caller),
          content: a.content,
          versionId: newId("ver"),
          eventId: newId("evt"),
          credentialId: a.p.caller.idempotencyKey === undefined ? null : a.p.caller.credentialId,
          key: a.p.caller.idempotencyKey ?? null,
          traceparent: a.p.traceparent,
          fieldsSeen: a.fieldsSeen,
        }));
        // One statement for creates of several requests: a span in the first one's trace, linked to the others'.
        const traced = accepted.flatMap((a) => (a.p.traceparent ? [a.p.traceparent] : []));
        rows =
          traced.length === 0
            ? await r.tasks.create(org, items)
            : await inSpan(
                "db.createTasks",
                {
                  kind: SpanKind.CLIENT,
                  parent: contextFromTraceparent(traced[0]),
                  links: traced.slice(1).flatMap((tp) => {
                    const sc = trace.getSpanContext(contextFromTraceparent(tp));
                    return sc ? [{ context: sc }] : [];
                  }),
                  attributes: { "db.system.name": "postgresql", "db.namespace": "tasks", "tasksvc.batch_size": items.length },
                },
                () => r.tasks.create(org, items),
              );
      } catch (e) {
        // A project or parent that vanished between the check and the insert.
        if (batch.length === 1 && e instanceof ReferenceVanished) throw fieldError(VANISHED_AT[e.what], "no longer exists in this organization");
        throw e;
      }
      res.written();
      for (const [i, a] of accepted.entries()) {
        const row = rows[i];
        // One row per create, in order (the statement's contract): a missing one settles nothing.
        if (!row) throw new Error(`the create statement returned ${rows.length} rows for ${accepted.length} creates`);
        settled.push(() => a.p.resolve(toTask(row)));
      }
    }
    for (const s of settled) s();
  }

  return {
    submit(caller: WriteCaller, body: CreateTaskBody): Promise<Task> {
      return new Promise<Task>((resolve, reject) => {
        const org = caller.organizationId;
        const queue = queues.get(org);
        const p = { caller, body, resolve, reject, traceparent: currentTraceparent() };
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
