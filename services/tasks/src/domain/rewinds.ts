import { type Actor, type Caller, type CreateRewindBody, REWIND_MAX_TASKS, type Rewind, type RewindJob } from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import type { Repositories } from "../repo/repositories.js";
import type { RewindRow, StoredMatch } from "../repo/rewinds-repo.js";
import { type Content, contentOf, toTask } from "../repo/task-json.js";
import { changesOf } from "./events/changes.js";
import { notFound } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { type PlannedTask, planTasks } from "./rewind-plan.js";

/** Up to this many tasks, an undo runs inside its request; more go to a job on the work queue. */
export const INLINE_TASKS = 100;
/**
 * Rewinds running as jobs per organization at once: the work queue's consumers are shared by every
 * organization, so one that queues many large undos must not hold them all.
 */
export const MAX_RUNNING = 3;
/** Tasks per transaction: each chunk locks its rows, writes, and records its items together. */
const CHUNK = 100;
/** A run holds its rewind this long past its last chunk; a run that stops longer is taken over. */
const LEASE_MS = 120_000;
/** Deliveries of a job that fails before the rewind is marked failed. */
const MAX_ATTEMPTS = 5;

export interface RewindOptions {
  retentionMs: number;
  queue(job: RewindJob, attempt: number): Promise<void>;
}

const chunks = <T>(all: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size));
  return out;
};

export function rewindsSystem(res: TasksResources, o: RewindOptions) {
  /** Plans the chunk's tasks; when applying, under their row locks, and does each task's undo with its item. */
  async function runChunk(r: Repositories, rw: RewindRow, tasks: { number: number; first: number }[], apply: boolean): Promise<number[]> {
    const org = rw.organization_id;
    // The trash path walks subtrees: taken before any row lock, as every tree change takes it.
    if (apply) await r.tasks.lockHierarchy(org);
    const numbers = tasks.map((t) => t.number);
    const rows = await r.rewinds.rows(org, numbers, apply);
    const created = tasks.filter((t) => t.first === 1).map((t) => t.number);
    const plans = planTasks({
      tasks,
      versions: await r.rewinds.versionsFrom(org, rw, tasks),
      rows: new Map(rows.map((row) => [Number(row.number), row])),
      withOtherSubtasks: await r.rewinds.withOtherSubtasks(org, rw, created),
    });
    const touched: number[] = [];
    if (apply) {
      const actor: Actor = { type: "rewind", id: rw.id, user_id: rw.requested_by };
      for (const p of plans) touched.push(...(await applyOne(r, rw, p, actor)));
    }
    await r.rewinds.addItems(
      rw.id,
      plans.map((p) => ({ number: p.number, item: p.item })),
    );
    return touched;
  }

  async function applyOne(r: Repositories, rw: RewindRow, p: PlannedTask, actor: Actor): Promise<number[]> {
    const org = rw.organization_id;
    if (p.row === undefined) return [];
    if (p.item.action === "trash") {
      const trashed = await r.trash.trashSubtree(org, p.number, rw.requested_by, o.retentionMs);
      await r.events.emitEach(trashed.map((t) => ({ organization_id: org, type: "task.deleted" as const, task: toTask(t), actor: rw.requested_by })));
      return trashed.map((t) => Number(t.number));
    }
    if (p.restore === undefined) return [];
    const now = contentOf(p.row);
    const was = contentOf({ ...p.row, ...p.restore.from });
    const after: Content = { ...now };
    for (const f of p.restore.fields) (after as unknown as Record<string, unknown>)[f] = was[f];
    // What the earlier value names may be gone since: a deleted project, label or custom field is not put back.
    const missing = new Set(await r.projects.missing(org, after.project_ids));
    after.project_ids = after.project_ids.filter((id) => !missing.has(id));
    const labels = await r.removals.lockLabels(org, after.label_ids);
    after.label_ids = after.label_ids.filter((id) => labels.has(id) || now.label_ids.includes(id));
    if (p.restore.fields.includes("custom_fields")) {
      const fields = new Set((await r.customFields.definitions(org, Object.keys(after.custom_fields), true)).map((d) => d.key));
      after.custom_fields = Object.fromEntries(Object.entries(after.custom_fields).filter(([k]) => fields.has(k)));
    }
    const projectsChanged = JSON.stringify(now.project_ids) !== JSON.stringify(after.project_ids);
    const updated = await r.tasks.updateContent(org, p.number, after, newId("ver"), projectsChanged, { actor, requestId: null, batchKey: null });
    const task = toTask(updated);
    await r.events.emit(org, rw.requested_by, "task.updated", task, changesOf(toTask(p.row), task), rw.id);
    p.item.to_version = updated.version;
    return [p.number];
  }

  async function afterWrites(org: string, touched: number[]) {
    res.written();
    if (touched.length === 0) return;
    res.cache.invalidate(org, touched);
    await res.changed(org, touched);
  }

  return {
    async create(c: Caller, body: CreateRewindBody): Promise<Rewind> {
      const org = c.organizationId;
      const m = body.match;
      // `until` is fixed now, so a job that comes again finds the same writes, and the undo's own never match.
      const stored: StoredMatch = {
        credential_id: m.credential_id ?? null,
        request_id: m.request_id ?? null,
        batch_key: m.batch_key ?? null,
        since: new Date(m.since),
        until: m.until === undefined ? res.now() : new Date(m.until),
      };
      let touched: number[] = [];
      let queued: RewindJob | undefined;
      return idempotentWrite({
        records: res.repos.idempotency,
        tx: res.tx,
        credentialId: c.credentialId,
        organizationId: org,
        key: c.idempotencyKey,
        operation: "createRewind",
        async work(r) {
          touched = [];
          queued = undefined;
          const tasks = await r.rewinds.matchedTasks(org, stored, REWIND_MAX_TASKS + 1);
          if (tasks.length > REWIND_MAX_TASKS) {
            throw fieldError(
              "/match",
              `matches writes to more than ${REWIND_MAX_TASKS} tasks: narrow it (a later since, an earlier until, a request or a batch)`,
            );
          }
          const inline = body.dry_run || tasks.length <= INLINE_TASKS;
          if (!inline) {
            const running = await r.rewinds.running(org);
            if (running >= MAX_RUNNING)
              throw new AppError(
                "limit_reached",
                `This organization already has ${running} rewinds running, the most it may at once; ask again once one has finished (GET /v1/rewinds/{id}).`,
              );
          }
          const id = newId("rwd");
          await r.rewinds.insert({
            id,
            organization_id: org,
            requested_by: c.userId,
            ...stored,
            dry_run: body.dry_run,
            status: inline ? "succeeded" : "running",
          });
          const rw = await r.rewinds.get(org, id);
          if (rw === undefined) throw new Error("rewind not found after insert");
          if (inline) for (const chunk of chunks(tasks, CHUNK)) touched.push(...(await runChunk(r, rw, chunk, !body.dry_run)));
          else queued = { organization_id: org, rewind_id: id };
          return r.rewinds.view(rw);
        },
        async afterCommit() {
          await afterWrites(org, touched);
          if (queued !== undefined) {
            await o.queue(queued, 0).catch((err: unknown) => res.log.warn({ err, ...queued }, "could not queue a rewind; the sweep queues it"));
          }
        },
      });
    },

    async get(c: Caller, id: string): Promise<Rewind> {
      const rw = await res.repos.rewinds.get(c.organizationId, id);
      if (rw === undefined) throw notFound("rewind");
      return res.repos.rewinds.view(rw);
    },

    /** One delivery of a job: the chunks not yet done, each in its own transaction under the rewind's row lock. */
    async run(job: RewindJob, working: () => void, deliveries: number): Promise<void> {
      const org = job.organization_id;
      const rw = await res.repos.rewinds.get(org, job.rewind_id);
      if (rw === undefined || rw.status !== "running") return;
      try {
        const tasks = await res.repos.rewinds.matchedTasks(org, rw, REWIND_MAX_TASKS);
        for (const chunk of chunks(tasks, CHUNK)) {
          const touched = await res.tx(async (r) => {
            const held = await r.rewinds.get(org, rw.id, true);
            if (held === undefined || held.status !== "running") return [];
            const done = await r.rewinds.done(
              rw.id,
              chunk.map((t) => t.number),
            );
            const todo = chunk.filter((t) => !done.has(t.number));
            await r.rewinds.lease(rw.id, LEASE_MS);
            return todo.length === 0 ? [] : runChunk(r, held, todo, true);
          });
          await afterWrites(org, touched);
          working();
        }
        await res.repos.rewinds.finish(rw.id, "succeeded", null);
      } catch (err) {
        if (deliveries < MAX_ATTEMPTS) throw err;
        res.log.error({ err, rewind_id: rw.id }, "a rewind failed");
        await res.repos.rewinds.finish(rw.id, "failed", `The undo failed after ${MAX_ATTEMPTS} attempts; the tasks listed were done.`);
      }
    },

    /** Running rewinds whose run stopped (a worker killed past its messages' redeliveries, a lost publish) are queued again. */
    async sweep(): Promise<void> {
      for (const s of await res.repos.rewinds.stalled(100)) await o.queue({ organization_id: s.organization_id, rewind_id: s.id }, s.published);
    },
  };
}
export type RewindsSystem = ReturnType<typeof rewindsSystem>;
