import type { CustomFieldValue, Recurrence, Task, TaskContentField, TaskStatus } from "@tasksvc/contracts";
import { TASK_FIELDS } from "@tasksvc/contracts";
import { KEYSET_TIME } from "@tasksvc/db";
import {
  CONTENT_RENDERINGS,
  type ContentColumns,
  type FieldRendering,
  iso,
  shownCustomSql,
  shownLabelsSql,
  TASK_RENDERINGS,
  type TaskRow,
} from "./task-fields.js";
import { actorJsonSql } from "./version-stamp.js";

export { inTaskOrder } from "@tasksvc/contracts";
export { type ContentColumns, iso, type TaskRow } from "./task-fields.js";

// Every builder of a task's shape derives from the field table (task-fields.ts), so they cannot drift apart.

export const TASK_COLUMNS = `number::text as number, owner_user_id, parent_number::text as parent_number, archived,
  current_version_id, version_count, version, title, description, status, priority, start_date,
  due_date, notes, story_points::text as story_points, recurrence, project_ids, assignee_ids,
  ${shownLabelsSql("")} as label_ids, ${shownCustomSql("")} as custom_fields, series_head::text as series_head, series_slot::text as series_slot, created_at, updated_at, deleted_at, to_char(updated_at at time zone 'UTC', ${KEYSET_TIME}) as cursor_at`;

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
  assignee_ids: string[];
  label_ids: string[];
  custom_fields: Record<string, CustomFieldValue>;
  parent_number: number | null;
}

/** jsonb's own key order (shorter first, then bytewise), so content built here compares equal to content read back. */
export function inJsonbOrder<T>(o: Record<string, T>): Record<string, T> {
  const keys = Object.keys(o).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, o[k] as T]));
}

export interface SeriesLink {
  head: number;
  slot: string;
}

/** Kept to the millisecond, so a value read back and sent again is the same value (no new version). */
export function toIsoOrNull(v: string | null): string | null {
  if (v === null) return null;
  return new Date(v.length === 10 ? `${v}T00:00:00.000Z` : v).toISOString();
}

function render<R>(fields: readonly (keyof Task)[], renderings: { [K in keyof Task]?: FieldRendering<K, R> }, row: R): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of fields) out[k] = renderings[k]?.of(row);
  return out;
}

type VersionColumns = ContentColumns & { owner_user_id: string };
type VersionField = TaskContentField | "owner_id";
const VERSION_RENDERINGS: { [K in VersionField]: FieldRendering<K, VersionColumns> } = {
  ...CONTENT_RENDERINGS,
  owner_id: TASK_RENDERINGS.owner_id as FieldRendering<"owner_id", VersionColumns>,
};
const VERSION_FIELDS = TASK_FIELDS.filter((k): k is VersionField => k in VERSION_RENDERINGS);

/**
 * A history item as JSON built by Postgres, byte for byte JSON.stringify of the history route's
 * item once the rows `versionJsonReencodeSql` names go through compactJson; `task_id` first. `v` prefixes
 * the version's columns, `t` its task's (the owner); `actor` last. Labels and values are the stored ones, as
 * the history route shows them: a version records what was.
 */
export function versionJsonSql(v: string, t: string): string {
  const stored: Partial<Record<VersionField, string>> = { label_ids: `${v}label_ids`, custom_fields: `${v}custom_fields` };
  const fields = VERSION_FIELDS.map((k) => `${stored[k] ?? VERSION_RENDERINGS[k].sql(k === "owner_id" ? t : v)} as "${k}"`);
  return `(select row_to_json(j)::text from (select 'T-' || ${v}task_number as task_id, ${v}id as id, ${v}version as version, ${fields.join(", ")}, ${TASK_RENDERINGS.created_at.sql(v)} as created_at, ${actorJsonSql(v)} as actor) j)`;
}

export const versionJsonReencodeSql = (v: string): string => reencodeWhen(VERSION_FIELDS, VERSION_RENDERINGS, v);

/** A history item's fields but its id, version and time, in the task's order. */
export function shownVersion(r: VersionColumns): Pick<Task, VersionField> {
  return render(VERSION_FIELDS, VERSION_RENDERINGS, r) as Pick<Task, VersionField>;
}

export function toTask(r: TaskRow): Task {
  return render(TASK_FIELDS, TASK_RENDERINGS, r) as Task;
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
    assignee_ids: r.assignee_ids,
    label_ids: r.label_ids,
    custom_fields: r.custom_fields,
    parent_number: r.parent_number === null ? null : Number(r.parent_number),
  };
}

const STATEMENT_FIELDS = ["id", "created_at", "updated_at"] as const;
type StatementField = (typeof STATEMENT_FIELDS)[number];
const TEMPLATE_FIELDS = TASK_FIELDS.filter((k) => !(STATEMENT_FIELDS as readonly string[]).includes(k));

export function taskTemplate(owner: string, c: Content, series: SeriesLink | null = null): Omit<Task, StatementField> {
  const row: TaskRow = {
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
    assignee_ids: c.assignee_ids,
    label_ids: c.label_ids,
    custom_fields: c.custom_fields,
    created_at: new Date(0),
    updated_at: new Date(0),
    cursor_at: "",
  };
  return render(TEMPLATE_FIELDS, TASK_RENDERINGS, row) as Omit<Task, StatementField>;
}

export const TEMPLATE_COMPLETION = `jsonb_build_object(${STATEMENT_FIELDS.map((k) => `'${k}', ${TASK_RENDERINGS[k].sql("t.")}`).join(", ")})`;

/**
 * Byte for byte as JSON.stringify(toTask()) writes it, so a list sends these bytes on without any
 * process parsing them (decision 0020). row_to_json writes compact JSON (json_build_object would
 * write `"id" : "T-6"`).
 */
export const TASK_JSON = `(select row_to_json(j)::text from (select ${TASK_FIELDS.map((k) => `${TASK_RENDERINGS[k].sql("")} as "${k}"`).join(", ")}) j)`;

/** The rows whose Postgres JSON differs from JSON.stringify's (see compactJson), as SQL on columns prefixed `t`. */
function reencodeWhen<F extends keyof Task>(fields: readonly F[], renderings: { [K in F]: { reencodeWhen?: (t: string) => string } }, t: string): string {
  return `(${fields
    .flatMap((k) => {
      const when = renderings[k].reencodeWhen;
      return when ? [when(t)] : [];
    })
    .join(" or ")})`;
}

/** Most rows are none of them, and cost nothing. */
export const TASK_JSON_REENCODE = reencodeWhen(TASK_FIELDS, TASK_RENDERINGS, "");

const QUOTE = 34;
const BACKSLASH = 92;

/** The quote at `at` is escaped: an odd number of backslashes stands before it. */
function escapedAt(text: string, at: number): boolean {
  let k = at - 1;
  while (text.charCodeAt(k) === BACKSLASH) k--;
  return (at - 1 - k) % 2 === 1;
}

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;
const startsNumber = (c: number) => c === 45 || (c >= 48 && c <= 57);
/** Digits, sign, point and exponent. */
const inNumber = (c: number) => (c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46 || c === 101 || c === 69;

/**
 * JSON as Postgres writes it (row_to_json around jsonb values), written as JSON.stringify writes
 * it: jsonb puts a space after `:` and `,`, and numeric writes 0.0000001 or 1.50 where JavaScript
 * writes 1e-7 and 1.5. Strings are escaped alike by both and are copied as they are. One pass,
 * where JSON.parse and JSON.stringify took a third of an export's time.
 */
export function compactJson(text: string): string {
  let out = "";
  let from = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escapedAt(text, end)) end = text.indexOf('"', end + 1);
      i = end === -1 ? n : end + 1;
    } else if (isSpace(c)) {
      out += text.slice(from, i);
      i++;
      from = i;
    } else if (startsNumber(c)) {
      let end = i + 1;
      while (end < n && inNumber(text.charCodeAt(end))) end++;
      const token = text.slice(i, end);
      // Integers of up to 15 characters are exact doubles, written back the same.
      if (end - i > 15 || token.includes(".") || token.includes("e") || token.includes("E")) {
        const shown = String(Number(token));
        if (shown !== token) {
          out += text.slice(from, i) + shown;
          from = end;
        }
      }
      i = end;
    } else i++;
  }
  return from === 0 ? text : out + text.slice(from);
}
