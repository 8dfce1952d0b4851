import { z } from "zod";
import { CreatedAt, EXAMPLE_INSTANT, inKeyOrder, OpaqueId, PageQuery, Text, Timestamp, TrimmedLabel, UpdatedAt } from "./common.js";
import { DateTimeInput } from "./dates.js";
import { EventActorId, EventType, TaskEventType } from "./event-types.js";
import { Recurrence, RecurrenceInput } from "./recurrence.js";

export const TaskStatus = z.enum(["TODO", "IN_PROGRESS", "IN_REVIEW", "COMPLETED", "BLOCKED"]);
export type TaskStatus = z.infer<typeof TaskStatus>;
export const TaskPriority = z.enum(["LOW", "MEDIUM", "HIGH", "URGENT"]);
export type TaskPriority = z.infer<typeof TaskPriority>;

/** `T-12` and `12` name the same task on input. */
export const TASK_ID_PATTERN = /^(?:T-)?[0-9]{1,12}$/;
export const TaskRef = z.string().regex(TASK_ID_PATTERN, { message: "must be a task id such as T-12 (or 12)" });
/** Null when it cannot name a task (malformed, or 0). */
export function taskNumber(ref: string): number | null {
  if (!TASK_ID_PATTERN.test(ref)) return null;
  const n = Number(ref.startsWith("T-") ? ref.slice(2) : ref);
  return n >= 1 ? n : null;
}
export const taskId = (n: number | string) => `T-${n}`;

const TITLE = { description: "A short single-line title.", examples: ["Write the announcement"] };
const DESCRIPTION = { description: "Free text (line breaks kept); null when none.", examples: ["Everything for the November launch."] };
const PRIORITY = { description: "How urgent the task is.", examples: ["HIGH"] };
const START_DATE = { description: "When work starts (UTC); null when unset.", examples: ["2026-11-24T09:00:00.000Z"] };
const INSTANT_RULE = "a date-time with an offset (2026-11-24T09:00:00Z), or a date (YYYY-MM-DD) meaning 00:00 UTC that day";
const START_DATE_INPUT = { description: `When work starts: ${INSTANT_RULE}.`, examples: ["2026-11-24T09:00:00.000Z"] };
const DUE_DATE = {
  description: "When it is due (UTC): the instant given, to the millisecond (one given as a date is 00:00 UTC that day); null when unset.",
  examples: ["2026-11-30T17:00:00.000Z"],
};
const NOTES = { description: "Free-form notes (line breaks kept); null when none.", examples: ["Ask legal before publishing."] };
const STORY_POINTS = { description: "An estimate in story points; null when unset.", examples: [3] };
const PROJECT_ID = "prj_5vN5Zu6nSVCjmB2jJBpwRY";
const PROJECT_IDS = { description: "The projects the task belongs to.", examples: [[PROJECT_ID]] };
const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";
const OWNER_ID = { description: "The user whose credential created the task (read-only).", examples: [USER_ID] };
const ASSIGNEE_IDS = {
  description: "The users the task is assigned to, in the order given (0-10); ids of members who later left stay until changed.",
  examples: [[USER_ID]],
};
const LABEL_ID = "lbl_4mQ8xT2pK7nD3vB9rL5sW1";
const LABEL_IDS = { description: "The task's labels, in the order given (0-20).", examples: [[LABEL_ID]] };
const CUSTOM_FIELDS = {
  description:
    "The organization's custom fields that have a value on this task, by key: text, a number, a date (YYYY-MM-DD), an option id (select), option ids (multi_select), a user id, a boolean (checkbox) or a URL.",
  examples: [{ estimate: 3, customer: "opt_2nK7xQ4mT9pL3vD6bR8sW5" }],
};
/** A custom field's value as stored and shown; its field's type decides which (the tasks service checks it). */
export const CustomFieldValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);
export type CustomFieldValue = z.infer<typeof CustomFieldValue>;
const PARENT_TASK_ID = { description: "The parent task when this is a subtask; null for a top-level task.", examples: ["T-7"] };

/** A task's fields in the order every answer, event and change shows them: the one table the tasks service renders each field from. */
export const Task = z.object({
  id: z.string().meta({ description: "The task's id: T-<n>, numbered per organization from 1.", examples: ["T-42"] }),
  version: z
    .number()
    .int()
    .meta({
      description: "1 at creation, one more at every change (a new content version, archiving, unarchiving); the task's ETag is this number in quotes.",
      examples: [3],
    }),
  title: z.string().meta(TITLE),
  description: z.string().nullable().meta(DESCRIPTION),
  status: TaskStatus.meta({ description: "Where the task stands.", examples: ["IN_PROGRESS"] }),
  priority: TaskPriority.nullable().meta(PRIORITY),
  start_date: Timestamp.nullable().meta(START_DATE),
  due_date: Timestamp.nullable().meta(DUE_DATE),
  notes: z.string().nullable().meta(NOTES),
  story_points: z.number().nullable().meta(STORY_POINTS),
  project_ids: z.array(z.string()).meta(PROJECT_IDS),
  owner_id: z.string().meta(OWNER_ID),
  assignee_ids: z.array(z.string()).meta(ASSIGNEE_IDS),
  label_ids: z.array(z.string()).meta(LABEL_IDS),
  custom_fields: z.record(z.string(), CustomFieldValue).meta(CUSTOM_FIELDS),
  recurrence: Recurrence.nullable().meta({ description: "How the task repeats (the rule with its RRULE form); null when it does not.", examples: [null] }),
  parent_task_id: z.string().nullable().meta(PARENT_TASK_ID),
  archived: z.boolean().meta({ description: "Whether the task is archived (hidden from lists unless asked for).", examples: [false] }),
  /** Additive: null on every task but an occurrence (the series' head included). */
  series_task_id: z
    .string()
    .nullable()
    .meta({
      description: "The recurring task this occurrence was made from (the series' head); null for every other task, the head included.",
      examples: ["T-12"],
    }),
  occurrence_date: z
    .string()
    .nullable()
    .meta({
      description: "The series' day this occurrence was made for (YYYY-MM-DD); null when series_task_id is.",
      examples: ["2026-11-25"],
    }),
  created_at: CreatedAt,
  updated_at: UpdatedAt,
});
export type Task = z.infer<typeof Task>;

/** A task's ETag: its version in quotes (a strong tag). */
export const taskEtag = (version: number) => `"${version}"`;

/** What a task rebuilt from jsonb is put back in. */
export const TASK_FIELDS = Object.keys(Task.shape) as readonly (keyof Task)[];

/** jsonb sorts keys by length. A field the task lacks stays absent (an older event); one the table does not know comes last (a newer producer's). */
export const inTaskOrder = <T extends object>(t: T): T => inKeyOrder(t, TASK_FIELDS);

const Title = TrimmedLabel.min(1, { message: "must not be empty" }).max(500);
const Description = Text.max(10_000);
const Notes = Text.max(100_000);
const StoryPoints = z.number().min(0).max(1000);
const ProjectRef = OpaqueId;
const ProjectIds = z
  .array(ProjectRef)
  .max(100)
  .refine((a) => new Set(a).size === a.length, { message: "must not repeat a project" });
const STATUS = { description: "The state it is in.", examples: ["TODO"] };
/** Checked against the organization's current members by the tasks service (400 at `/assignee_ids/<i>`). */
export const MAX_ASSIGNEES = 10;
const AssigneeIds = z
  .array(OpaqueId)
  .max(MAX_ASSIGNEES)
  .refine((a) => new Set(a).size === a.length, { message: "must not repeat a user" });
export const MAX_TASK_LABELS = 20;
const LabelIds = z
  .array(OpaqueId)
  .max(MAX_TASK_LABELS)
  .refine((a) => new Set(a).size === a.length, { message: "must not repeat a label" });
const LABEL_IDS_INPUT = {
  description: `The task's labels (0-${MAX_TASK_LABELS} distinct label ids of this organization), in order; replaces the list.`,
  examples: [[LABEL_ID]],
};
/** Keys as custom field definitions have them; each value is checked against its field's type by the tasks service. */
export const CUSTOM_KEY_SOURCE = "[a-z][a-z0-9_]{0,39}";
export const CUSTOM_FIELD_KEY = new RegExp(`^${CUSTOM_KEY_SOURCE}$`);
const CustomFieldsInput = z
  .record(z.string().regex(CUSTOM_FIELD_KEY, { message: "must be a custom field's key" }), CustomFieldValue.nullable())
  .refine((o) => Object.keys(o).length <= 50, { message: "must name at most 50 fields" });
const CUSTOM_FIELDS_INPUT = {
  description:
    "Values of the organization's custom fields, by key: the keys named are set (null clears one), the others stay as they are. Each value must suit its field's type.",
  examples: [{ estimate: 5, customer: null }],
};
const ASSIGNEE_IDS_INPUT = {
  description: `The users to assign (0-${MAX_ASSIGNEES} distinct user ids, each a current member of the organization); replaces the list. Each follows the task.`,
  examples: [[USER_ID]],
};
const RECURRENCE = {
  description:
    "How the task repeats; null when it does not. The task is its series' first occurrence; completing or archiving a series' latest occurrence creates the next one at once, due on its day.",
  examples: [{ frequency: "WEEKLY", interval: 1, by_weekday: [1, 4], timezone: "Europe/Paris" }],
};

export const CreateTaskBody = z
  .strictObject({
    title: Title.meta({ description: "The task's title (single line, 1-500 characters).", examples: ["Write the announcement"] }),
    description: Description.optional().meta(DESCRIPTION),
    status: TaskStatus.optional().meta(STATUS),
    priority: TaskPriority.optional().meta(PRIORITY),
    start_date: DateTimeInput.optional().meta(START_DATE_INPUT),
    due_date: DateTimeInput.optional().meta({
      description: `When it is due: ${INSTANT_RULE}. A recurring task created without one is due at 00:00 UTC of its first occurrence day.`,
      examples: ["2026-11-30"],
    }),
    notes: Notes.optional().meta(NOTES),
    story_points: StoryPoints.optional().meta(STORY_POINTS),
    project_id: ProjectRef.optional().meta({
      description: "One project to put the task in (shorthand for a one-element project_ids).",
      examples: [PROJECT_ID],
    }),
    project_ids: ProjectIds.optional().meta(PROJECT_IDS),
    assignee_ids: AssigneeIds.optional().meta(ASSIGNEE_IDS_INPUT),
    label_ids: LabelIds.optional().meta(LABEL_IDS_INPUT),
    custom_fields: CustomFieldsInput.optional().meta(CUSTOM_FIELDS_INPUT),
    parent_task_id: TaskRef.optional().meta(PARENT_TASK_ID),
    recurrence: RecurrenceInput.optional().meta(RECURRENCE),
  })
  .superRefine((b, ctx) => {
    if (b.project_id !== undefined && b.project_ids !== undefined)
      ctx.addIssue({ code: "custom", path: ["project_ids"], message: "give project_id or project_ids, not both" });
  });
export type CreateTaskBody = z.infer<typeof CreateTaskBody>;

/** PATCH: every field optional; null clears a nullable field; project_ids replaces the set. */
export const UpdateTaskBody = z.strictObject({
  title: Title.optional().meta(TITLE),
  description: Description.nullable().optional().meta(DESCRIPTION),
  status: TaskStatus.optional().meta(STATUS),
  priority: TaskPriority.nullable().optional().meta(PRIORITY),
  start_date: DateTimeInput.nullable()
    .optional()
    .meta({ ...START_DATE_INPUT, description: `When work starts: ${INSTANT_RULE}; null clears it.` }),
  due_date: DateTimeInput.nullable()
    .optional()
    .meta({ description: `When it is due: ${INSTANT_RULE}; null clears it.`, examples: ["2026-11-30T17:00:00Z"] }),
  notes: Notes.nullable().optional().meta(NOTES),
  story_points: StoryPoints.nullable().optional().meta(STORY_POINTS),
  project_ids: ProjectIds.optional().meta(PROJECT_IDS),
  assignee_ids: AssigneeIds.optional().meta(ASSIGNEE_IDS_INPUT),
  label_ids: LabelIds.optional().meta(LABEL_IDS_INPUT),
  custom_fields: CustomFieldsInput.optional().meta(CUSTOM_FIELDS_INPUT),
  parent_task_id: TaskRef.nullable().optional().meta(PARENT_TASK_ID),
  recurrence: RecurrenceInput.nullable().optional().meta(RECURRENCE),
});
export type UpdateTaskBody = z.infer<typeof UpdateTaskBody>;

/** A malformed task id names no task (404), so path ids stay strings; a value no id can be is a 400. */
export const TaskIdParam = OpaqueId.meta({ description: "The task's id (T-<n>).", examples: ["T-1"] });
export const TaskParams = z.object({ task_id: TaskIdParam });

/** A free-text change when the event had no room for both values: lengths in UTF-16 code units (as the API's limits count), null for null. */
export const TruncatedChange = z.object({
  from_length: z.int().nonnegative().nullable(),
  to_length: z.int().nonnegative().nullable(),
  truncated: z.literal(true),
});
export type TruncatedChange = z.infer<typeof TruncatedChange>;
export const TRUNCATABLE_FIELDS = ["title", "description", "notes"] as const;
/** Empty when nothing the task shows changed. The truncated shape comes first: `{ from, to }` of unknowns would also accept it, emptied. */
export const TaskChanges = z.record(z.string(), z.union([TruncatedChange, z.object({ from: z.unknown(), to: z.unknown() })]));
export type TaskChanges = z.infer<typeof TaskChanges>;

/** Fields in the task's order, whatever order jsonb stored them in. */
export function inChangesOrder(changes: TaskChanges): TaskChanges {
  const out: TaskChanges = {};
  const order = [...TASK_FIELDS, ...Object.keys(changes)];
  for (const k of order) {
    const c = changes[k];
    if (c === undefined || k in out) continue;
    out[k] = "truncated" in c ? { from_length: c.from_length, to_length: c.to_length, truncated: true } : { from: c.from, to: c.to };
  }
  return out;
}

/** One schema for the outbox row, the stream message and what consumers parse; not strict, so consumers ignore fields a newer producer adds. */
export const TaskEvent = z.object({
  id: z.string().min(1),
  type: TaskEventType,
  organization_id: z.string().min(1),
  actor_id: EventActorId,
  created_at: Timestamp,
  // Events from before tasks showed their version lack it (the stream and the feed keep events for days).
  data: Task.extend({ version: Task.shape.version.optional() }),
  changes: TaskChanges.optional(),
  rewind_id: z.string().optional(),
});
export type TaskEvent = z.infer<typeof TaskEvent>;

const EVENT_ID = "evt_2nK7xQ4mT9pL3vD6bR8sW5";
const EVENT_TASK: Task = {
  id: "T-42",
  version: 3,
  title: "Write the announcement",
  description: null,
  status: "IN_PROGRESS",
  priority: "HIGH",
  start_date: null,
  due_date: "2026-11-30T00:00:00.000Z",
  notes: null,
  story_points: 3,
  project_ids: [],
  owner_id: USER_ID,
  assignee_ids: [USER_ID],
  label_ids: [LABEL_ID],
  custom_fields: { estimate: 3 },
  recurrence: null,
  parent_task_id: null,
  archived: false,
  series_task_id: null,
  occurrence_date: null,
  created_at: EXAMPLE_INSTANT,
  updated_at: EXAMPLE_INSTANT,
};

/** Only on the samples of a test event and verify, so real events' bodies stay what they were. */
/** What is left of an erased task in the events feed: its id. */
export const ErasedTask = z.object({ id: z.string().meta({ description: "The erased task's id (T-<n>).", examples: ["T-42"] }) });

export const TEST_EVENT = z
  .literal(true)
  .optional()
  .meta({
    description:
      "Only on a sample sent to a webhook endpoint by its test-event or verify operation, never on a real event (which omits it, here and in deliveries): `true`. A sample task event's task is `T-0`, an id no task has.",
    examples: [true],
  });

/** Exactly the body a webhook delivers for the event, plus its id (the delivery's `webhook-id`). */
export const TaskFeedEvent = z.object({
  id: z.string().meta({ description: "The event's id: the `webhook-id` header of every delivery of it.", examples: [EVENT_ID] }),
  type: TaskEventType.meta({
    description:
      "What happened: task.created, task.updated or task.archived; task.deleted when it went to the trash (with its subtasks, each its own event), task.restored when it came back from it; task.due_soon when an open task's due date came within the due-soon window (24 hours by default), task.overdue when it passed. Each of the last two comes once per due date value of a task that is neither COMPLETED nor archived, at most one check late (checks come every minute by default); a task whose due date is already past when it is first checked gets task.overdue alone. Moving the due date makes both come again for the new date.",
    examples: ["task.updated"],
  }),
  timestamp: Timestamp.meta({ description: "When it happened (UTC, ISO 8601): the time of the change's transaction.", examples: [EXAMPLE_INSTANT] }),
  data: z
    .union([
      Task.extend({
        version: Task.shape.version
          .optional()
          .meta({ description: "The task's version after the change; absent on events from before tasks showed it.", examples: [3] }),
      }),
      ErasedTask,
    ])
    .meta({
      description:
        "The task after the change, in its API shape; for task.due_soon and task.overdue, the task as it was when its due date came near or passed; for task.deleted, the task as it went to the trash. Once the task is erased (task.purged), its earlier events keep only `{ id }` here and lose `changes`.",
      examples: [EVENT_TASK],
    }),
  changes: TaskChanges.optional().meta({
    description:
      "On task.updated and task.archived: each field of the task that changed, with its value before (`from`) and after (`to`); empty when nothing the task shows changed. Absent on task.created, task.due_soon, task.overdue, task.deleted and task.restored, on events of an erased task, and on events from before it was added. When both values would make the event larger than 256 KiB, each free-text field (title, description, notes) that changed is given as `{ from_length, to_length, truncated: true }` instead: the lengths in characters (null for a null value); the new value is in `data`.",
    examples: [{ status: { from: "TODO", to: "IN_PROGRESS" }, version: { from: 2, to: 3 } }],
  }),
  rewind_id: z
    .string()
    .optional()
    .meta({ description: "On a task.updated an undo wrote: the rewind's id (`rwd_…`). Absent otherwise.", examples: ["rwd_3pK8xQ2mT7nL9vD4bR5sW6"] }),
  test: TEST_EVENT,
});
export type TaskFeedEvent = z.infer<typeof TaskFeedEvent>;

export const EVENT_RETENTION_DAYS = 30;

const EventTime = z.iso.datetime({ offset: true });
export const ListEventsQuery = PageQuery.extend({
  type: EventType.optional().meta({
    description: "Only events of this type. The webhook_endpoint.* types need the scope webhooks:read; without it they are left out.",
    examples: ["task.updated"],
  }),
  // No example: an id the caller's organization lacks is a 404.
  task_id: TaskRef.optional().meta({
    description:
      "Only the task.* events of this task, T-<n>, also while it is in the trash (404 when no task has this id, or once it was erased); its comments' events are not matched.",
  }),
  created_gte: EventTime.optional().meta({ description: "Only events that occurred at or after this time (ISO 8601).", examples: ["2026-11-01T00:00:00Z"] }),
  created_lt: EventTime.optional().meta({ description: "Only events that occurred before this time (ISO 8601).", examples: ["2026-11-24T00:00:00Z"] }),
}).strict();
export const EventParams = z.object({
  event_id: OpaqueId.meta({ description: "The event's id: the `webhook-id` header of its deliveries.", examples: [EVENT_ID] }),
});

/** Broadcast by a tasks replica after a write, to drop cached copies. */
/** `all`: every task of the organization (a label removed from all of them is no longer shown). */
export const TasksChanged = z.object({ organization_id: z.string(), numbers: z.array(z.number().int()), all: z.boolean().optional() });
export const tasksChangedSubject = (namespace: string) => `${namespace}.evt.tasks-cache.changed`;

export const taskEventsStream = (namespace: string) => `${namespace}_task_events`;
export const taskEventSubject = (namespace: string, type: EventType) => `${namespace}.evt.tasks.${type}`;

export const TaskSummary = z.object({
  task_id: z.string(),
  title: z.string(),
  status: TaskStatus,
  archived: z.boolean(),
  owner_user_id: z.string(),
  /** Additive: a board accepts a task its owner or any assignee plans. */
  assignee_ids: z.array(z.string()).default([]),
  parent_task_id: z.string().nullable(),
});
export type TaskSummary = z.infer<typeof TaskSummary>;
