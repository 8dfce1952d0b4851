import { z } from "zod";
import { CreatedAt, Deleted, ObjectId, OpaqueId } from "./common.js";
import type { RpcCatalog } from "./rpc.js";
import { DateOnly } from "./dates.js";
import { TaskRef, TaskStatus } from "./tasks.js";

// The per-user daily board (decision 0009).

/**
 * The most entries one section of a day holds: a board is answered whole, with each entry's title,
 * and must fit one message between services (a title of 500 four-byte characters is about 2 KiB).
 */
export const MAX_SECTION_ENTRIES = 200;

export const DailySection = z.enum(["TODO", "PROGRESS"]);
export type DailySection = z.infer<typeof DailySection>;
export const DailyStatus = z.enum(["COMPLETED", "PLANNED", "NOT_FILLED", "FILLING"]);
export type DailyStatus = z.infer<typeof DailyStatus>;
export const SECTIONS = ["TODO", "PROGRESS"] as const;

const SECTION = { description: "A section of the day's board.", examples: ["TODO"] };
const DAY = { description: "The UTC day (YYYY-MM-DD).", examples: ["2026-11-23"] };
const TASK_ID = { description: "A task's id (T-<n>).", examples: ["T-1"] };
const ENTRY_ID = "ent_4mT8xQ2pL6vK9nD1bR3sW7";

export const BoardEntry = z.object({
  id: z.string().meta({ description: "The entry's id: use it to remove the entry.", examples: [ENTRY_ID] }),
  section: DailySection.meta(SECTION),
  task_id: z.string().meta(TASK_ID),
  title: z.string().meta({ description: "The task's title when the entry was read.", examples: ["Write the announcement"] }),
  status: TaskStatus.meta({ description: "The task's status when the entry was read.", examples: ["TODO"] }),
  created_at: CreatedAt,
});
export type BoardEntry = z.infer<typeof BoardEntry>;

export const BoardSection = z.object({
  section: DailySection.meta(SECTION),
  status: DailyStatus.meta({ description: "How the section's planning stands: NOT_FILLED, FILLING, PLANNED or COMPLETED.", examples: ["FILLING"] }),
  entries: z.array(BoardEntry).meta({ description: "The tasks placed on the section, in the order they were placed.", examples: [[]] }),
});
export const Board = z.object({
  date: z.string().meta(DAY),
  sections: z.array(BoardSection).meta({ description: "The day's two sections, always both, in order: TODO, then PROGRESS.", examples: [[]] }),
});
export type Board = z.infer<typeof Board>;

export const SectionStatus = z.object({
  date: z.string().meta(DAY),
  section: DailySection.meta(SECTION),
  status: DailyStatus.meta({ description: "The section's planning status.", examples: ["COMPLETED"] }),
});
export type SectionStatus = z.infer<typeof SectionStatus>;

export const DateQuery = z.strictObject({ date: DateOnly.meta(DAY) });
export const SetSectionStatusBody = z.strictObject({
  section: DailySection.meta(SECTION),
  status: DailyStatus.meta({ description: "The section's new planning status.", examples: ["COMPLETED"] }),
});
export const PlanEntryBody = z.strictObject({ date: DateOnly.meta(DAY), task_id: TaskRef.meta(TASK_ID), section: DailySection.meta(SECTION) });
export const EntryParams = z.object({ entry_id: OpaqueId.meta({ description: "The board entry's id.", examples: [ENTRY_ID] }) });
export const DeletedEntry = z.object({ id: ObjectId, deleted: Deleted });

/** Internal: a message on the rollover stream, from the tasks service's recurrence scheduler. */
export const RollOverInput = z.strictObject({
  organization_id: OpaqueId,
  user_id: OpaqueId,
  date: DateOnly,
  task_number: z.number().int().positive(),
  section: DailySection,
});
export type RollOverInput = z.infer<typeof RollOverInput>;
/** False when the task was rolled onto that day before: once per task and day. */
export const RollOverResult = z.object({ placed: z.boolean() });

export const boardsRpc = {
  service: "boards",
  ops: {
    getBoard: { input: DateQuery, output: Board },
    setSectionStatus: { input: SetSectionStatusBody.extend({ date: DateOnly }), output: SectionStatus },
    planEntry: { input: PlanEntryBody, output: BoardEntry },
    deleteEntry: { input: EntryParams, output: DeletedEntry },
    // Still served so that a tasks replica of the previous release, which asks by RPC, keeps working during a rolling upgrade.
    rollOver: { input: RollOverInput, output: RollOverResult },
  },
} as const satisfies RpcCatalog;
