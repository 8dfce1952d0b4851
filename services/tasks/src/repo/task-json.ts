import type { Recurrence, Task, TaskStatus } from "@tasksvc/contracts";
import { TASK_FIELD_ORDER, taskId } from "@tasksvc/contracts";
import { KEYSET_TIME } from "@tasksvc/db";
import { ISO_SQL } from "./sql-time.js";

/**
 * A task's API shape and every builder of it, in one place so they cannot drift apart: toTask()
 * from a row read here; TASK_JSON, the same bytes written by Postgres for lists (relayed without
 * parsing); taskTemplate(), the fields toTask() decides before a create has its number and
 * timestamps (the create statement adds those); inTaskOrder(), toTask()'s field order put back on
 * a task that came out of jsonb. test/task-json.test.ts holds them equal.
 */

/** The columns every task read selects; bigint and numeric come back as text, days as text, instants as Dates. */
export const TASK_COLUMNS = `number::text as number, owner_user_id, parent_number::text as parent_number, archived,
  current_version_id, version_count, coalesce(version, version_count) as version, title, description, status, priority, start_date,
  due_date, notes, story_points::text as story_points, recurrence, project_ids,
  series_head::text as series_head, series_slot::text as series_slot, created_at, updated_at, to_char(updated_at at time zone 'UTC', ${KEYSET_TIME}) as cursor_at`;

/** The columns a task row and a version row share, as the API shows them. */
export interface ContentColumns {
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: Task["priority"];
  start_date: Date | null;
  due_date: Date | null;
  notes: string | null;
  story_points: string | null;
  project_ids: string[];
  recurrence: Recurrence | null;
}

export interface TaskRow extends ContentColumns {
  number: string;
  owner_user_id: string;
  parent_number: string | null;
  archived: boolean;
  current_version_id: string;
  version_count: number;
  /** What the ETag names: content versions, archives and unarchives counted (migration 0013). */
  version: number;
  /** The series an occurrence was made from, and its slot (migration 0007); null on other tasks. */
  series_head: string | null;
  series_slot: string | null;
  created_at: Date;
  updated_at: Date;
  cursor_at: string;
}

/** A version's content: what PATCH compares and what history shows; start_date and due_date as the API shows them (ISO, milliseconds, Z). */
export interface Content {
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: Task["priority"];
  start_date: string | null;
  due_date: string | null;
  notes: string | null;
  story_points: number | null;
  recurrence: Recurrence | null;
  project_ids: string[];
  parent_number: number | null;
}

/** An occurrence's place in its series (the scheduler's creates): head task number and slot day. */
export interface SeriesLink {
  head: number;
  slot: string;
}

export const iso = (d: Date) => d.toISOString();

/**
 * An instant a client sent (a date-time with an offset, or a day meaning 00:00 UTC) as Content
 * holds it and the API shows it: UTC, to the millisecond. Kept to the millisecond so that a value
 * read back and sent again is the same value (no new version).
 */
export function toIsoOrNull(v: string | null): string | null {
  if (v === null) return null;
  return new Date(v.length === 10 ? `${v}T00:00:00.000Z` : v).toISOString();
}

/** The content fields as the API shows them, on a task and on each of its versions. */
export function shownContent(r: ContentColumns) {
  return {
    title: r.title,
    description: r.description,
    status: r.status,
    priority: r.priority,
    start_date: r.start_date ? iso(r.start_date) : null,
    due_date: r.due_date ? iso(r.due_date) : null,
    notes: r.notes,
    story_points: r.story_points === null ? null : Number(r.story_points),
    project_ids: r.project_ids,
    recurrence: r.recurrence,
  };
}

export function toTask(r: TaskRow): Task {
  return {
    id: taskId(r.number),
    version: r.version,
    ...shownContent(r),
    parent_task_id: r.parent_number === null ? null : taskId(r.parent_number),
    archived: r.archived,
    series_task_id: r.series_head === null ? null : taskId(r.series_head),
    occurrence_date: r.series_slot,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

/** A task's fields in toTask()'s order: the order of every answer, list item and feed event that shows a task. */
const TASK_FIELDS: readonly string[] = Object.keys(
  toTask({
    number: "0",
    owner_user_id: "",
    parent_number: null,
    archived: false,
    current_version_id: "",
    version_count: 1,
    version: 1,
    series_head: null,
    series_slot: null,
    title: "",
    description: null,
    status: "TODO",
    priority: null,
    start_date: null,
    due_date: null,
    notes: null,
    story_points: null,
    recurrence: null,
    project_ids: [],
    created_at: new Date(0),
    updated_at: new Date(0),
    cursor_at: "",
  }),
);
// The gateway puts live events' data in the contracts' order: it must be this one.
if (TASK_FIELDS.join() !== TASK_FIELD_ORDER.join()) throw new Error(`TASK_FIELD_ORDER (contracts) differs from toTask()'s order: ${TASK_FIELDS.join()}`);

/**
 * A task whose field order was lost, put back in toTask()'s: one Postgres stored as jsonb (an
 * event's data, an Idempotency-Key record) comes back with its keys sorted by length. A field
 * it lacks stays absent (an event from before the field), one toTask() does not know comes last.
 */
export function inTaskOrder(t: Task): Task {
  const from: Record<string, unknown> = t;
  const out: Record<string, unknown> = {};
  for (const k of TASK_FIELDS) if (k in from) out[k] = from[k];
  for (const k of Object.keys(from)) if (!(k in out)) out[k] = from[k];
  return out as Task;
}

export function contentOf(r: TaskRow): Content {
  return {
    title: r.title,
    description: r.description,
    status: r.status,
    priority: r.priority,
    start_date: r.start_date ? iso(r.start_date) : null,
    due_date: r.due_date ? iso(r.due_date) : null,
    notes: r.notes,
    story_points: r.story_points === null ? null : Number(r.story_points),
    recurrence: r.recurrence,
    project_ids: r.project_ids,
    parent_number: r.parent_number === null ? null : Number(r.parent_number),
  };
}

/** A task's API shape before it has a number and timestamps (toTask decides every other field). */
export function taskTemplate(owner: string, c: Content, series: SeriesLink | null = null): Omit<Task, "id" | "created_at" | "updated_at"> {
  const epoch = new Date(0);
  const {
    id: _id,
    created_at: _c,
    updated_at: _u,
    ...rest
  } = toTask({
    number: "0",
    owner_user_id: owner,
    parent_number: c.parent_number === null ? null : String(c.parent_number),
    archived: false,
    current_version_id: "",
    version_count: 1,
    version: 1,
    series_head: series === null ? null : String(series.head),
    series_slot: series === null ? null : series.slot,
    title: c.title,
    description: c.description,
    status: c.status,
    priority: c.priority,
    start_date: c.start_date === null ? null : new Date(c.start_date),
    due_date: c.due_date === null ? null : new Date(c.due_date),
    notes: c.notes,
    story_points: c.story_points === null ? null : String(c.story_points),
    recurrence: c.recurrence,
    project_ids: c.project_ids,
    created_at: epoch,
    updated_at: epoch,
    cursor_at: "",
  });
  return rest;
}

/**
 * What the create statement adds to a taskTemplate() (column `template` of its rows) for the
 * inserted row `t`: the id and the timestamps, written as toTask() writes them.
 */
export const TEMPLATE_COMPLETION = `jsonb_build_object('id', 'T-' || t.number, 'created_at', to_char(t.created_at at time zone 'UTC', ${ISO_SQL}),
  'updated_at', to_char(t.updated_at at time zone 'UTC', ${ISO_SQL}))`;

/**
 * A task row's API shape as JSON text, built by Postgres byte for byte as JSON.stringify(toTask())
 * writes it from the same row: a list sends these bytes on, to the gateway and from there to
 * HTTP, without any process parsing them (decision 0020). row_to_json writes compact JSON
 * (json_build_object would write `"id" : "T-6"`), the subquery's columns in toTask()'s order.
 */
export const TASK_JSON = `(select row_to_json(j)::text from (select 'T-' || number as id, coalesce(version, version_count) as version, title, description, status, priority,
  to_char(start_date at time zone 'UTC', ${ISO_SQL}) as start_date, to_char(due_date at time zone 'UTC', ${ISO_SQL}) as due_date, notes,
  story_points, project_ids, recurrence, 'T-' || parent_number as parent_task_id, archived, 'T-' || series_head as series_task_id,
  series_slot::text as occurrence_date, to_char(created_at at time zone 'UTC', ${ISO_SQL}) as created_at,
  to_char(updated_at at time zone 'UTC', ${ISO_SQL}) as updated_at) j)`;

/**
 * The rows whose TASK_JSON JavaScript would write otherwise, re-encoded by the service: a
 * recurrence (jsonb, which Postgres writes with a space after `:` and `,`) and story points under
 * 1e-6 (numeric writes 0.0000001, JavaScript 1e-7). Every other value Postgres writes as
 * JSON.stringify does, escapes included; most rows are neither, and cost nothing.
 */
export const TASK_JSON_REENCODE = `(recurrence is not null or (story_points > 0 and story_points < 0.000001))`;
