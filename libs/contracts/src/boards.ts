import { z } from "zod";
import { OpaqueId, Timestamp } from "./common.js";
import type { RpcCatalog } from "./rpc.js";
import { DateOnly, TaskRef, TaskStatus } from "./tasks.js";

// The per-user daily board (spec 2.10, 3.2, 4.1; decision 0009).

export const DailySection = z.enum(["TODO", "PROGRESS"]);
export type DailySection = z.infer<typeof DailySection>;
export const DailyStatus = z.enum(["COMPLETED", "PLANNED", "NOT_FILLED", "FILLING"]);
export type DailyStatus = z.infer<typeof DailyStatus>;
export const SECTIONS = ["TODO", "PROGRESS"] as const;

export const BoardEntry = z.object({
  id: z.string(),
  section: DailySection,
  task_id: z.string(),
  /** The task's CURRENT title and status, read when the board is read. */
  title: z.string(),
  status: TaskStatus,
  created_at: Timestamp,
});
export type BoardEntry = z.infer<typeof BoardEntry>;

export const BoardSection = z.object({ section: DailySection, status: DailyStatus, entries: z.array(BoardEntry) });
export const Board = z.object({ date: z.string(), sections: z.array(BoardSection) });
export type Board = z.infer<typeof Board>;

export const SectionStatus = z.object({ date: z.string(), section: DailySection, status: DailyStatus });
export type SectionStatus = z.infer<typeof SectionStatus>;

export const DateQuery = z.strictObject({ date: DateOnly });
export const SetSectionStatusBody = z.strictObject({ section: DailySection, status: DailyStatus });
export const PlanEntryBody = z.strictObject({ date: DateOnly, task_id: TaskRef, section: DailySection });
export const EntryParams = z.object({ entry_id: OpaqueId });
export const DeletedEntry = z.object({ id: z.string(), deleted: z.literal(true) });

/**
 * Internal (the tasks service's recurrence scheduler, decision 0021): an unfinished occurrence of
 * a series with rollover_enabled, to be placed on its owner's board for `date`. Sent with a system
 * context, so the organization and user are in the input.
 */
export const RollOverInput = z.strictObject({
  organization_id: OpaqueId,
  user_id: OpaqueId,
  date: DateOnly,
  task_number: z.number().int().positive(),
  section: DailySection,
});
export type RollOverInput = z.infer<typeof RollOverInput>;
/** `placed` is false when the task was rolled onto that day before (by any replica): once per task and day. */
export const RollOverResult = z.object({ placed: z.boolean() });

export const boardsRpc = {
  service: "boards",
  ops: {
    getBoard: { input: DateQuery, output: Board },
    setSectionStatus: { input: SetSectionStatusBody.extend({ date: DateOnly }), output: SectionStatus },
    planEntry: { input: PlanEntryBody, output: BoardEntry },
    deleteEntry: { input: EntryParams, output: DeletedEntry },
    // Internal (tasks service, recurrence rollover).
    rollOver: { input: RollOverInput, output: RollOverResult },
  },
} as const satisfies RpcCatalog;
