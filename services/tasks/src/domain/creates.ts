import type { Caller, CreateTaskBody, Task } from "@tasksvc/contracts";
import { KeyRecordedMeanwhile, newId } from "@tasksvc/db";
import { fieldError, isAppError } from "@tasksvc/errors";
import { contextFromTraceparent, currentTraceparent, inSpan, SpanKind, trace } from "@tasksvc/telemetry";
import { keyBatches } from "@tasksvc/runtime";
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
}

/** What a create of a batch came to: its task, its refusal, or (a keyed create a check refused) a run of its own. */
type Outcome = { task: Task } | { refused: unknown } | { alone: true };

const MAX_BATCH = 64;
const VANISHED_AT = { project: "/project_id", parent: "/parent_task_id", label: "/label_ids", "custom field": "/custom_fields" } as const;

/**
 * Group commit (decision 0008): a create holds its organization's number counter to the commit,
 * so instead of queueing transactions on that lock each replica runs one create statement per
 * organization at a time (`keyBatches`), holding every create that arrived meanwhile. A create
 * that fails its own checks is left out; anything else re-runs the batch's creates one by one, so
 * one bad create never fails its neighbours.
 */
export function createBatcher(res: TasksResources, prepare: Prepare) {
  const batches = keyBatches<Pending, Outcome>(MAX_BATCH, async (org, batch) => {
    const [first] = batch;
    return batch.length === 1 && first ? [{ task: await executeAlone(first) }] : execute(org, batch);
  });

  /**
   * A keyed create goes straight to its statement, whose plain insert of the key fails when the key
   * is recorded: a first execution (nearly every one) is one round trip, and only a retry (or a
   * refusal) pays a second. A record found live is the answer; one past its 24 hours is dropped
   * and the create runs again, once.
   */
  async function executeAlone(p: Pending): Promise<Task> {
    const { organizationId, credentialId, idempotencyKey: key } = p.caller;
    const records = res.repos.idempotency;
    let refused: unknown;
    try {
      return await only(execute(organizationId, [p]));
    } catch (e) {
      if (key === undefined || !(e instanceof KeyRecordedMeanwhile || isAppError(e))) throw e;
      if (isAppError(e)) refused = e;
    }
    try {
      const stored = await records.replayOrDropExpired<Task>(credentialId, key, "createTask");
      if (stored !== undefined) return stored;
      if (refused !== undefined) throw refused;
      return await only(execute(organizationId, [p]));
    } catch (e) {
      if (e === refused) throw e;
      // Another execution recorded this key while ours ran: its result is the answer.
      return records.replayRecordedMeanwhile<Task>(e, credentialId, key, "createTask");
    }
  }

  /** The task of a batch of one, or its refusal thrown. */
  async function only(outcomes: Promise<Outcome[]>): Promise<Task> {
    const [o] = await outcomes;
    if (o !== undefined && "task" in o) return o.task;
    if (o !== undefined && "refused" in o) throw o.refused;
    throw new Error("a create run alone came to no task");
  }

  /** One outcome per create, in order, or throws with none of them written. */
  async function execute(org: string, batch: readonly Pending[]): Promise<Outcome[]> {
    const r = res.repos;
    const outcomes: Outcome[] = [];
    const accepted: Array<{ p: Pending; at: number; content: Content; fieldsSeen: FieldStamp[] }> = [];
    for (const [at, p] of batch.entries()) {
      try {
        accepted.push({ p, at, ...(await prepare(r, p.caller, p.body)) });
      } catch (e) {
        if (!isAppError(e)) throw e;
        // A keyed create refused by a check may be the retry of one that passed it: alone, its
        // record is looked for before the refusal is the answer.
        if (p.caller.idempotencyKey !== undefined) {
          if (batch.length === 1) throw e;
          outcomes[at] = { alone: true };
        } else outcomes[at] = { refused: e };
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
        outcomes[a.at] = { task: toTask(row) };
      }
    }
    return outcomes;
  }

  return {
    async submit(caller: WriteCaller, body: CreateTaskBody): Promise<Task> {
      const p = { caller, body, traceparent: currentTraceparent() };
      const o = await batches(caller.organizationId, p);
      if ("task" in o) return o.task;
      if ("refused" in o) throw o.refused;
      // Alone, its record is looked for before the refusal is the answer.
      return executeAlone(p);
    },
  };
}
