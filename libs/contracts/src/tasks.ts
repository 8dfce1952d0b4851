import rrule from "rrule";
import { z } from "zod";
import { attachmentOps } from "./attachments.js";
import { Label, OpaqueId, PageQuery, Text, Timestamp, page } from "./common.js";
import type { RpcCatalog } from "./rpc.js";

// rrule ships CommonJS without named ESM exports: the default import is its module object.
const { RRule } = rrule;

// ---------------------------------------------------------------------------------------------
// Scalars (spec 2.1, 4.1; decisions in docs/decisions/0008-tasks.md)

export const TaskStatus = z.enum(["TODO", "IN_PROGRESS", "IN_REVIEW", "COMPLETED", "BLOCKED"]);
export type TaskStatus = z.infer<typeof TaskStatus>;
export const TaskPriority = z.enum(["LOW", "MEDIUM", "HIGH", "URGENT"]);
export type TaskPriority = z.infer<typeof TaskPriority>;

/** Spec 2.1: a task's only public id. `T-12` and `12` name the same task on input. */
export const TASK_ID_PATTERN = /^(?:T-)?[0-9]{1,12}$/;
export const TaskRef = z.string().regex(TASK_ID_PATTERN, { message: "must be a task id such as T-12 (or 12)" });
/** The task number a reference names, or null when it cannot name a task (malformed, or 0). */
export function taskNumber(ref: string): number | null {
  if (!TASK_ID_PATTERN.test(ref)) return null;
  const n = Number(ref.startsWith("T-") ? ref.slice(2) : ref);
  return n >= 1 ? n : null;
}
export const taskId = (n: number | string) => `T-${n}`;

/**
 * The days and instants the API accepts (decision 0010): UTC years 1000 to 9999. Year 0000 passes
 * JavaScript's Date but no Postgres date or timestamptz (500 before), years before 1000 invite the
 * two-digit-year traps of Date.UTC and of other clients' parsers, and an instant past 9999-12-31
 * (9999-12-31T23:00-05:00) has no four-digit ISO form, so it could be stored but never shown.
 */
export const DATE_RANGE = { first: "1000-01-01", last: "9999-12-31" } as const;
const FIRST_INSTANT = Date.parse(`${DATE_RANGE.first}T00:00:00.000Z`);
const LAST_INSTANT = Date.parse(`${DATE_RANGE.last}T23:59:59.999Z`);
const OUT_OF_RANGE = `must lie between ${DATE_RANGE.first} and ${DATE_RANGE.last} (UTC)`;

function isCalendarDay(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00.000Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

/** `YYYY-MM-DD`, a real calendar day (2026-02-30 is refused) within DATE_RANGE, interpreted as a UTC day. */
export const DateOnly = z.string().superRefine((s, ctx) => {
  // One issue per value: a malformed day is not also reported as out of range.
  if (!isCalendarDay(s)) ctx.addIssue({ code: "custom", message: "must be a calendar day written YYYY-MM-DD" });
  else if (s < DATE_RANGE.first) ctx.addIssue({ code: "custom", message: OUT_OF_RANGE });
});

/** An ISO-8601 date-time with an offset (Z or ±hh:mm), or a bare date taken as 00:00 UTC; its instant within DATE_RANGE. */
export const DateTimeInput = z
  .union([z.iso.datetime({ offset: true }), z.string().refine(isCalendarDay)], { message: "must be a date-time (2026-11-22T09:00:00Z) or a date YYYY-MM-DD" })
  .superRefine((s, ctx) => {
    const t = Date.parse(s.length === 10 ? `${s}T00:00:00.000Z` : s);
    if (!(t >= FIRST_INSTANT && t <= LAST_INSTANT)) ctx.addIssue({ code: "custom", message: OUT_OF_RANGE });
  });

// ---------------------------------------------------------------------------------------------
// Recurrence (spec 2.1 names the fields; the value sets and rules are ours, decision 0008)

export const RecurrenceFrequency = z.enum(["DAILY", "WEEKLY", "MONTHLY", "YEARLY"]);
export const RecurrenceBasis = z.enum(["SCHEDULE", "COMPLETION"]);

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const RecurrenceFields = {
  frequency: RecurrenceFrequency,
  interval: z.number().int().min(1).max(365),
  /** ISO weekdays, 1 = Monday … 7 = Sunday; WEEKLY only. */
  by_weekday: z
    .array(z.number().int().min(1).max(7))
    .min(1)
    .max(7)
    .refine((a) => new Set(a).size === a.length, { message: "must not repeat a weekday" }),
  /** Day of the month, 1-31 (a month without that day uses its last day); MONTHLY and YEARLY only. */
  by_month_day: z.number().int().min(1).max(31),
  basis: RecurrenceBasis,
  timezone: Label.min(1).max(64).refine(isTimeZone, { message: "must be an IANA time zone such as Europe/Berlin" }),
  start_date: DateOnly,
  end_date: DateOnly,
  max_occurrences: z.number().int().min(1).max(10_000),
  rollover_enabled: z.boolean(),
  active: z.boolean(),
};

/** The rule as fields: frequency required, the rest optional with the defaults below. */
const RecurrenceFieldsObject = z.strictObject({
  frequency: RecurrenceFields.frequency,
  interval: RecurrenceFields.interval.optional(),
  by_weekday: RecurrenceFields.by_weekday.optional(),
  by_month_day: RecurrenceFields.by_month_day.optional(),
  basis: RecurrenceFields.basis.optional(),
  timezone: RecurrenceFields.timezone.optional(),
  start_date: RecurrenceFields.start_date.optional(),
  end_date: RecurrenceFields.end_date.optional(),
  max_occurrences: RecurrenceFields.max_occurrences.optional(),
  rollover_enabled: RecurrenceFields.rollover_enabled.optional(),
  active: RecurrenceFields.active.optional(),
});
type RecurrenceFieldsInput = z.output<typeof RecurrenceFieldsObject>;

/** What the fields say together that each alone cannot: [field, problem]. */
function ruleProblems(r: RecurrenceFieldsInput): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (r.by_weekday !== undefined && r.frequency !== "WEEKLY") out.push(["by_weekday", "applies only to frequency WEEKLY"]);
  if (r.by_month_day !== undefined && r.frequency !== "MONTHLY" && r.frequency !== "YEARLY")
    out.push(["by_month_day", "applies only to frequency MONTHLY or YEARLY"]);
  if (r.end_date !== undefined && r.max_occurrences !== undefined) out.push(["max_occurrences", "cannot be combined with end_date (a series ends one way)"]);
  if (r.end_date !== undefined && r.start_date !== undefined && r.end_date < r.start_date) out.push(["end_date", "must not be before start_date"]);
  return out;
}

/** The fields an RRULE states; `rrule` on input is one or the other, never both. */
const RULE_FIELDS = ["frequency", "interval", "by_weekday", "by_month_day", "end_date", "max_occurrences"] as const;
/** RFC 5545 weekday codes, Monday first: by_weekday n is RRULE_DAYS[n - 1]. */
const RRULE_DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"];
const RRULE_PARTS = new Set(["FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "COUNT", "UNTIL"]);
const RRULE_FREQ: Record<number, RecurrenceFieldsInput["frequency"]> = {
  [RRule.YEARLY]: "YEARLY",
  [RRule.MONTHLY]: "MONTHLY",
  [RRule.WEEKLY]: "WEEKLY",
  [RRule.DAILY]: "DAILY",
};

/**
 * The rule fields an RFC 5545 RRULE value states (parsed by the `rrule` library), or what in it
 * this API cannot keep: FREQ (DAILY to YEARLY), INTERVAL, BYDAY (plain weekdays), one positive
 * BYMONTHDAY, COUNT and UNTIL are the parts the fields can say; a day-level schedule has no use
 * for BYHOUR and the like, and ordinals (1MO) or sets (BYSETPOS) have no field to live in.
 */
function fieldsOfRrule(value: string): { fields: Record<string, unknown> } | { problem: string } {
  const body = value.replace(/^RRULE:/i, "");
  const given = new Map<string, string>();
  for (const part of body.split(";")) {
    const [name = "", ...rest] = part.split("=");
    const key = name.toUpperCase();
    if (!RRULE_PARTS.has(key))
      return { problem: `has ${key || "an empty part"}, which this API does not support (use FREQ, INTERVAL, BYDAY, BYMONTHDAY, COUNT, UNTIL)` };
    given.set(key, rest.join("="));
  }
  // BYDAY and UNTIL are read here, not by the library: it throws on an unknown weekday and rolls
  // an impossible date (20261399) over into a real one instead of refusing it.
  const byday = given.get("BYDAY");
  const weekdays = byday?.toUpperCase().split(",");
  if (weekdays?.some((d) => /^[+-]?\d+[A-Z]{2}$/.test(d))) return { problem: "BYDAY takes plain weekdays here (MO,TH), not ordinals such as 1MO" };
  if (weekdays?.some((d) => !RRULE_DAYS.includes(d))) return { problem: "BYDAY takes weekdays written MO, TU, WE, TH, FR, SA or SU" };
  const until = given.get("UNTIL");
  const day = until === undefined ? undefined : /^(\d{4})(\d{2})(\d{2})(T\d{6}Z?)?$/.exec(until);
  if (day === null) return { problem: "UNTIL must be a date (YYYYMMDD) or a UTC date-time (YYYYMMDDTHHMMSSZ)" };
  let o: ReturnType<typeof RRule.parseString>;
  try {
    o = RRule.parseString(body);
  } catch (e) {
    return { problem: `is not an RFC 5545 RRULE value (${e instanceof Error ? e.message : String(e)})` };
  }
  const frequency = o.freq === undefined ? undefined : RRULE_FREQ[o.freq];
  if (!frequency) return { problem: "needs FREQ=DAILY, WEEKLY, MONTHLY or YEARLY" };
  const fields: Record<string, unknown> = { frequency };
  if (o.interval !== undefined) fields["interval"] = o.interval;
  if (weekdays) fields["by_weekday"] = weekdays.map((d) => RRULE_DAYS.indexOf(d) + 1);
  if (o.bymonthday !== undefined && o.bymonthday !== null) {
    const days = Array.isArray(o.bymonthday) ? o.bymonthday : [o.bymonthday];
    if (days.length !== 1) return { problem: "BYMONTHDAY takes one day here" };
    fields["by_month_day"] = days[0];
  }
  if (o.count !== undefined && o.count !== null) fields["max_occurrences"] = o.count;
  // The calendar check is end_date's own (DateOnly), reported at rrule like every field's.
  if (day) fields["end_date"] = `${day[1]}-${day[2]}-${day[3]}`;
  return { fields };
}

/**
 * What a client sends: the rule as fields (frequency required), or as an RFC 5545 `rrule` with
 * the other settings (basis, timezone, start_date, rollover_enabled, active) beside it.
 */
export const RecurrenceInput = RecurrenceFieldsObject.extend({
  frequency: RecurrenceFields.frequency.optional(),
  rrule: Label.min(1).max(500).optional(),
}).transform((r, ctx): RecurrenceFieldsInput => {
  const { rrule: value, ...given } = r;
  if (value === undefined) {
    if (given.frequency === undefined) {
      ctx.addIssue({ code: "custom", path: ["frequency"], message: "is required (or give the rule as rrule)" });
      return z.NEVER;
    }
    const fields = { ...given, frequency: given.frequency };
    for (const [path, message] of ruleProblems(fields)) ctx.addIssue({ code: "custom", path: [path], message });
    return fields;
  }
  const both = RULE_FIELDS.filter((k) => given[k] !== undefined);
  for (const k of both) ctx.addIssue({ code: "custom", path: [k], message: "give the rule as rrule or as fields, not both" });
  const parsed = fieldsOfRrule(value);
  if ("problem" in parsed) {
    ctx.addIssue({ code: "custom", path: ["rrule"], message: parsed.problem });
    return z.NEVER;
  }
  const checked = RecurrenceFieldsObject.safeParse({ ...given, ...parsed.fields });
  if (!checked.success) {
    for (const issue of checked.error.issues) ctx.addIssue({ code: "custom", path: ["rrule"], message: `${issue.path.join(".")} ${issue.message}` });
    return z.NEVER;
  }
  for (const [path, message] of ruleProblems(checked.data)) ctx.addIssue({ code: "custom", path: ["rrule"], message: `${path} ${message}` });
  return both.length ? z.NEVER : checked.data;
});
export type RecurrenceInput = z.infer<typeof RecurrenceInput>;

/** What the API shows: every field present; `rrule` is the RFC 5545 rule derived from the rest. */
export const Recurrence = z.object({
  frequency: RecurrenceFrequency,
  interval: z.number().int(),
  by_weekday: z.array(z.number().int()),
  by_month_day: z.number().int().nullable(),
  basis: RecurrenceBasis,
  timezone: z.string(),
  start_date: z.string().nullable(),
  end_date: z.string().nullable(),
  max_occurrences: z.number().int().nullable(),
  rollover_enabled: z.boolean(),
  active: z.boolean(),
  rrule: z.string(),
});
export type Recurrence = z.infer<typeof Recurrence>;

/** Fills the defaults and derives `rrule` (RFC 5545 RRULE value). */
export function normalizeRecurrence(r: RecurrenceInput): Recurrence {
  const interval = r.interval ?? 1;
  const byWeekday = [...(r.by_weekday ?? [])].sort((a, b) => a - b);
  const parts = [`FREQ=${r.frequency}`, `INTERVAL=${interval}`];
  if (byWeekday.length) parts.push(`BYDAY=${byWeekday.map((d) => RRULE_DAYS[d - 1]).join(",")}`);
  if (r.by_month_day !== undefined) parts.push(`BYMONTHDAY=${r.by_month_day}`);
  if (r.max_occurrences !== undefined) parts.push(`COUNT=${r.max_occurrences}`);
  if (r.end_date !== undefined) parts.push(`UNTIL=${r.end_date.replaceAll("-", "")}`);
  return {
    frequency: r.frequency,
    interval,
    by_weekday: byWeekday,
    by_month_day: r.by_month_day ?? null,
    basis: r.basis ?? "SCHEDULE",
    timezone: r.timezone ?? "UTC",
    start_date: r.start_date ?? null,
    end_date: r.end_date ?? null,
    max_occurrences: r.max_occurrences ?? null,
    rollover_enabled: r.rollover_enabled ?? false,
    active: r.active ?? true,
    rrule: parts.join(";"),
  };
}

// ---------------------------------------------------------------------------------------------
// Resources

export const Task = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  status: TaskStatus,
  priority: TaskPriority.nullable(),
  start_date: Timestamp.nullable(),
  due_date: Timestamp.nullable(),
  notes: z.string().nullable(),
  story_points: z.number().nullable(),
  project_ids: z.array(z.string()),
  parent_task_id: z.string().nullable(),
  archived: z.boolean(),
  recurrence: Recurrence.nullable(),
  /** Additive (issue 16): the series an occurrence was made for, and its day in it; null on every other task (the head included). */
  series_task_id: z.string().nullable(),
  occurrence_date: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Task = z.infer<typeof Task>;

/** Spec 2.2, plus the version's project links and recurrence (additive). */
export const TaskVersion = Task.pick({
  title: true,
  description: true,
  status: true,
  priority: true,
  start_date: true,
  due_date: true,
  notes: true,
  story_points: true,
  project_ids: true,
  recurrence: true,
}).extend({ id: z.string(), created_at: Timestamp });
export type TaskVersion = z.infer<typeof TaskVersion>;

export const DependencyItem = z.object({ task_id: z.string(), title: z.string(), status: TaskStatus, open: z.boolean() });
/** Spec 2.3. */
export const DependencyView = z.object({
  task_id: z.string(),
  is_blocked: z.boolean(),
  blocked_by_count: z.number().int(),
  blocking_count: z.number().int(),
  blocked_by: z.array(DependencyItem),
  blocking: z.array(DependencyItem),
});
export type DependencyView = z.infer<typeof DependencyView>;

/** Spec 2.6. */
export const Project = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Project = z.infer<typeof Project>;

// ---------------------------------------------------------------------------------------------
// Request bodies and queries (spec 4.1)

const Title = Label.trim().min(1, { message: "must not be empty" }).max(500);
const Description = Text.max(10_000);
const Notes = Text.max(100_000);
const StoryPoints = z.number().min(0).max(1000);
const ProjectRef = OpaqueId;
const ProjectIds = z
  .array(ProjectRef)
  .max(100)
  .refine((a) => new Set(a).size === a.length, { message: "must not repeat a project" });

export const CreateTaskBody = z
  .strictObject({
    title: Title,
    description: Description.optional(),
    status: TaskStatus.optional(),
    priority: TaskPriority.optional(),
    start_date: DateTimeInput.optional(),
    due_date: DateOnly.optional(),
    notes: Notes.optional(),
    story_points: StoryPoints.optional(),
    project_id: ProjectRef.optional(),
    project_ids: ProjectIds.optional(),
    parent_task_id: TaskRef.optional(),
    recurrence: RecurrenceInput.optional(),
  })
  .superRefine((b, ctx) => {
    if (b.project_id !== undefined && b.project_ids !== undefined)
      ctx.addIssue({ code: "custom", path: ["project_ids"], message: "give project_id or project_ids, not both" });
  });
export type CreateTaskBody = z.infer<typeof CreateTaskBody>;

/** PATCH: every field optional; null clears a nullable field; project_ids replaces the set. */
export const UpdateTaskBody = z.strictObject({
  title: Title.optional(),
  description: Description.nullable().optional(),
  status: TaskStatus.optional(),
  priority: TaskPriority.nullable().optional(),
  start_date: DateTimeInput.nullable().optional(),
  due_date: DateOnly.nullable().optional(),
  notes: Notes.nullable().optional(),
  story_points: StoryPoints.nullable().optional(),
  project_ids: ProjectIds.optional(),
  parent_task_id: TaskRef.nullable().optional(),
  recurrence: RecurrenceInput.nullable().optional(),
});
export type UpdateTaskBody = z.infer<typeof UpdateTaskBody>;

/** A query flag; booleans pass through so that a parsed query can be parsed again (RPC). */
const BoolParam = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")], { message: "must be true or false" });

export const ListTasksQuery = PageQuery.extend({
  status: TaskStatus.optional(),
  project_id: ProjectRef.optional(),
  parent_task_id: TaskRef.optional(),
  series_task_id: TaskRef.optional(),
  archived: BoolParam.default(false),
}).strict();

/**
 * Path ids stay strings: a malformed task id names no task (404), it is not a bad request. A value
 * that no id can be (NUL, a control character, over 100 characters) is refused as 400 (0010).
 */
export const TaskParams = z.object({ task_id: OpaqueId });
export const DependencyParams = z.object({ task_id: OpaqueId, blocker_task_id: OpaqueId });
export const ProjectParams = z.object({ project_id: OpaqueId });

export const AddDependencyBody = z.strictObject({ blocker_task_id: TaskRef });

const ProjectName = Label.trim().min(1, { message: "must not be empty" }).max(200);
const ProjectDescription = Text.min(1).max(2000);
export const CreateProjectBody = z.strictObject({
  name: ProjectName,
  description: ProjectDescription.optional(),
});
export const UpdateProjectBody = z.strictObject({
  name: ProjectName.optional(),
  description: ProjectDescription.nullable().optional(),
});

// ---------------------------------------------------------------------------------------------
// Events (spec 6; DESIGN.md section 5)

export const TaskEventType = z.enum(["task.created", "task.updated", "task.archived"]);
export type TaskEventType = z.infer<typeof TaskEventType>;
/**
 * The envelope of every task event: the payload of a tasks.outbox row, the JetStream message on
 * `taskEventSubject(ns, type)`, and what consumers parse (with `consume()` of libs/nats). One
 * schema for all three, so producer and consumers cannot drift apart. `id` is the event id: the
 * stream's Nats-Msg-Id (a re-sent row is dropped as a duplicate) and later the `webhook-id`.
 * `data` is the task in its API shape after the change. Not strict: a consumer ignores fields a
 * newer producer added (changes are additive only).
 */
export const TaskEvent = z.object({
  id: z.string().min(1),
  type: TaskEventType,
  organization_id: z.string().min(1),
  created_at: Timestamp,
  data: Task,
});
export type TaskEvent = z.infer<typeof TaskEvent>;

/**
 * A task event as the events feed (GET /v1/events) shows it: exactly the body a webhook delivers
 * for it (`type`, `timestamp`, `data`) and the event's id, which is the delivery's `webhook-id`
 * header. A consumer that missed deliveries reads the same objects here, for 30 days.
 */
export const Event = z.object({ id: z.string(), type: TaskEventType, timestamp: Timestamp, data: Task });
export type Event = z.infer<typeof Event>;

/** How long the feed keeps an event (the tasks service sweeps older ones). */
export const EVENT_RETENTION_DAYS = 30;

const EventTime = z.iso.datetime({ offset: true });
/**
 * GET /v1/events: newest first; `type` filters by event type, `created_gte` and `created_lt` by
 * the event's time (from, inclusive; to, exclusive).
 */
export const ListEventsQuery = PageQuery.extend({
  type: TaskEventType.optional(),
  task_id: TaskRef.optional(),
  created_gte: EventTime.optional(),
  created_lt: EventTime.optional(),
}).strict();
export const EventParams = z.object({ event_id: OpaqueId });

/** Broadcast by a tasks replica after a write changed these tasks (drops cached copies). */
export const TasksChanged = z.object({ organization_id: z.string(), numbers: z.array(z.number().int()) });
export const tasksChangedSubject = (namespace: string) => `${namespace}.evt.tasks-cache.changed`;

/** JetStream stream of task events and its subjects, per namespace. */
export const taskEventsStream = (namespace: string) => `${namespace}_task_events`;
export const taskEventSubject = (namespace: string, type: TaskEventType) => `${namespace}.evt.tasks.${type}`;

/** What other services may learn of a task (the boards service plans and shows tasks). */
export const TaskSummary = z.object({
  task_id: z.string(),
  title: z.string(),
  status: TaskStatus,
  archived: z.boolean(),
  owner_user_id: z.string(),
  parent_task_id: z.string().nullable(),
});
export type TaskSummary = z.infer<typeof TaskSummary>;

// ---------------------------------------------------------------------------------------------
// RPC catalog

/** A write that may answer "created" (201) or "already there" (200). */
const Upserted = <T extends z.ZodType>(t: T) => z.object({ created: z.boolean(), view: t });

export const tasksRpc = {
  service: "tasks",
  ops: {
    createTask: { input: CreateTaskBody, output: Task },
    listTasks: { input: ListTasksQuery, output: page(Task) },
    getTask: { input: TaskParams, output: Task },
    updateTask: { input: z.object({ task_id: OpaqueId, patch: UpdateTaskBody }), output: Task },
    archiveTask: { input: TaskParams, output: Task },
    unarchiveTask: { input: TaskParams, output: Task },
    taskHistory: { input: PageQuery.extend({ task_id: OpaqueId }), output: page(TaskVersion) },
    listEvents: { input: ListEventsQuery, output: page(Event) },
    getEvent: { input: EventParams, output: Event },
    getDependencies: { input: TaskParams, output: DependencyView },
    addDependency: { input: AddDependencyBody.extend({ task_id: OpaqueId }), output: Upserted(DependencyView) },
    removeDependency: { input: DependencyParams, output: DependencyView },
    createProject: { input: CreateProjectBody, output: Project },
    listProjects: { input: PageQuery, output: page(Project) },
    getProject: { input: ProjectParams, output: Project },
    updateProject: { input: z.object({ project_id: OpaqueId, patch: UpdateProjectBody }), output: Project },
    deleteProject: { input: ProjectParams, output: z.object({ id: z.string(), deleted: z.literal(true) }) },
    // Internal (boards service): many tasks in one request; unknown numbers are simply absent.
    lookupTasks: { input: z.object({ numbers: z.array(z.number().int().positive()).max(1000) }), output: z.object({ tasks: z.array(TaskSummary) }) },
    /** A task and its direct subtasks (null task when it does not exist in the organization). */
    taskWithSubtasks: {
      input: z.object({ number: z.number().int().positive() }),
      output: z.object({ task: TaskSummary.nullable(), subtasks: z.array(TaskSummary) }),
    },
    ...attachmentOps,
  },
} as const satisfies RpcCatalog;
