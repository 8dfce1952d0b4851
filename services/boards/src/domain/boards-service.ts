import {
  MAX_SECTION_ENTRIES,
  SECTIONS,
  taskId,
  taskNumber,
  type Board,
  type BoardEntry,
  type Caller,
  type DailySection,
  type DailyStatus,
  type RollOverInput,
  type SectionStatus,
  type TaskSummary,
} from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { AlreadyPlaced, type EntryRow } from "../repo/boards-repo.js";
import type { BoardsResources } from "./resources.js";

const numberOf = (t: TaskSummary) => Number(t.task_id.slice(2));
/** Its owner or any of its assignees may plan it. */
const plannable = (t: TaskSummary, userId: string) => (t.owner_user_id === userId || t.assignee_ids.includes(userId)) && !t.archived;

const sectionFull = (b: { date: string; task_id: string; section: DailySection }) =>
  new AppError(
    "limit_reached",
    `With ${b.task_id} and its subtasks the ${b.section} section of ${b.date} would hold more than ${MAX_SECTION_ENTRIES} entries, the most a section holds: remove entries, or plan some of the subtasks on another day.`,
  );

export function boardsService(res: BoardsResources) {
  const { repo } = res;

  const toEntry = (row: EntryRow, t: TaskSummary): BoardEntry => ({
    id: row.id,
    section: row.section,
    task_id: taskId(row.task_number),
    title: t.title,
    status: t.status,
    created_at: row.created_at,
  });

  /** Copies where they may be served, the rest in one request; a task in the trash or erased is absent. */
  const summariesOf = async (c: Caller, numbers: number[]): Promise<Map<number, TaskSummary>> => {
    const found = new Map<number, TaskSummary>();
    const copies = res.servesCopies();
    const missing = copies ? res.summaries.take(c.organizationId, numbers, found) : numbers;
    if (missing.length === 0) return found;
    const epoch = res.summaries.epoch();
    const read = await res.tasks.lookup(c.ctx, missing);
    if (copies) res.summaries.put(c.organizationId, read, epoch);
    for (const t of read) found.set(numberOf(t), t);
    return found;
  };

  return {
    /**
     * Titles and statuses are the tasks' current ones, in at most one request however many entries there are.
     * An entry whose task was archived after planning is hidden (it could not be planned now).
     */
    async board(c: Caller, date: string): Promise<Board> {
      const { sections, entries } = await repo.day(c.organizationId, c.userId, date);
      const byNumber = await summariesOf(c, [...new Set(entries.map((e) => Number(e.task_number)))]);
      const status = new Map(sections.map((s) => [s.section, s.status]));
      return {
        date,
        sections: SECTIONS.map((section) => ({
          section,
          status: status.get(section) ?? "NOT_FILLED",
          entries: entries.flatMap((e) => {
            const t = byNumber.get(Number(e.task_number));
            return e.section === section && t && !t.archived ? [toEntry(e, t)] : [];
          }),
        })),
      };
    },

    async setStatus(c: Caller, date: string, section: DailySection, status: DailyStatus): Promise<SectionStatus> {
      await repo.setStatus(c.organizationId, c.userId, date, section, status);
      return { date, section, status };
    },

    /** A parent brings its unarchived direct subtasks; entries on the other section move, with new ids. */
    async plan(c: Caller, body: { date: string; task_id: string; section: DailySection }): Promise<BoardEntry> {
      const { organizationId: org, userId: user } = c;
      return idempotentWrite({
        records: repo.idempotency,
        tx: res.tx,
        credentialId: c.credentialId,
        key: c.idempotencyKey,
        operation: "planEntry",
        // Asked of the tasks service before the transaction, so no connection waits on NATS.
        async prepare() {
          const n = taskNumber(body.task_id);
          // One more than a section holds: enough to know the plan cannot fit, and a bounded reply.
          const view = n === null ? { task: null, subtasks: [] } : await res.tasks.withSubtasks(c.ctx, n, c.userId, MAX_SECTION_ENTRIES);
          const task = view.task;
          if (!task) throw new AppError("resource_not_found", "No task with that id exists in this organization.");
          if (task.owner_user_id !== c.userId && !task.assignee_ids.includes(c.userId))
            throw fieldError("/task_id", "only tasks you own or are assigned to can be planned on your board");
          if (task.archived) throw fieldError("/task_id", "an archived task cannot be planned; unarchive it first");
          return { task, subtasks: view.subtasks.filter((s) => plannable(s, c.userId)) };
        },
        async work(r, { task, subtasks }) {
          await r.lockDay(org, user, body.date);
          const numbers = [numberOf(task), ...subtasks.map(numberOf)];
          const existing = new Map((await r.entriesOf(org, user, body.date, numbers)).map((e) => [Number(e.task_number), e]));
          const own = existing.get(numberOf(task));
          if (own?.section === body.section) throw fieldError("/task_id", `${task.task_id} is already on the ${body.section} section of ${body.date}`);
          try {
            await r.deleteEntries([...existing.values()].filter((e) => e.section !== body.section).map((e) => e.id));
            const row = await r.insertEntry(newId("ent"), org, user, body.date, body.section, numberOf(task));
            for (const s of subtasks) {
              if (existing.get(numberOf(s))?.section === body.section) continue;
              await r.insertEntry(newId("ent"), org, user, body.date, body.section, numberOf(s));
            }
            if ((await r.sectionCount(org, user, body.date, body.section)) > MAX_SECTION_ENTRIES) throw sectionFull(body);
            await r.markFilling(org, user, body.date, body.section);
            return toEntry(row, task);
          } catch (e) {
            // Two plans of the same task on the same day at once: the second finds it placed.
            if (e instanceof AlreadyPlaced) throw fieldError("/task_id", `${task.task_id} was placed on ${body.date} by a concurrent request`);
            throw e;
          }
        },
      });
    },

    /**
     * Rollover (decision 0021): once per task and day. A task the user placed on that day stays where
     * it is, and an entry the user removes after a rollover is not put back.
     */
    async rollOver(i: RollOverInput): Promise<{ placed: boolean }> {
      return res.tx(async (r) => {
        if (!(await r.recordRollover(i.organization_id, i.task_number, i.date))) return { placed: false };
        // A full section takes no rollover: the record stays, so the day is not tried again.
        await r.lockDay(i.organization_id, i.user_id, i.date);
        if ((await r.sectionCount(i.organization_id, i.user_id, i.date, i.section)) >= MAX_SECTION_ENTRIES) return { placed: false };
        const placed = await r.placeIfAbsent(newId("ent"), i.organization_id, i.user_id, i.date, i.section, i.task_number);
        if (placed) await r.markFilling(i.organization_id, i.user_id, i.date, i.section);
        return { placed };
      });
    },

    async remove(c: Caller, entryId: string): Promise<{ id: string; deleted: true }> {
      if (!(await repo.deleteEntry(c.organizationId, c.userId, entryId)))
        throw new AppError("resource_not_found", "No entry with that id exists on your boards.");
      return { id: entryId, deleted: true };
    },
  };
}
export type BoardsService = ReturnType<typeof boardsService>;
