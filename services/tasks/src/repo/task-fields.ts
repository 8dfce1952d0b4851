import type { CustomFieldValue, Recurrence, Task, TaskContentField, TaskStatus } from "@tasksvc/contracts";
import { taskId } from "@tasksvc/contracts";
import { ISO_SQL } from "./sql-time.js";

/**
 * How each field is rendered, by Postgres into JSON text and by TypeScript into a value, side by
 * side; complete against the contract's Task at compile time. test/task-json.test.ts holds the
 * two equal byte for byte.
 */

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
  assignee_ids: string[];
  label_ids: string[];
  /** As jsonb keeps it: keys by length, then bytes. */
  custom_fields: Record<string, CustomFieldValue>;
  recurrence: Recurrence | null;
}

export interface TaskRow extends ContentColumns {
  number: string;
  owner_user_id: string;
  parent_number: string | null;
  archived: boolean;
  current_version_id: string;
  version_count: number;
  /** Content versions, archives and unarchives counted (migration 0013). */
  version: number;
  series_head: string | null;
  series_slot: string | null;
  created_at: Date;
  updated_at: Date;
  /** Set while the task is in the trash: rows read for the service's own work (removals, project deletes) may be. */
  deleted_at?: Date | null;
  cursor_at: string;
}

export interface FieldRendering<K extends keyof Task, R> {
  sql: (t: string) => string;
  of: (r: R) => Task[K];
  /** When Postgres writes the value otherwise than JSON.stringify does: such rows are re-encoded by the service. */
  reencodeWhen?: (t: string) => string;
}

export const iso = (d: Date) => d.toISOString();

/**
 * Whether a removal runs in the row's organization. The subquery does not depend on the row, so
 * Postgres runs it once per statement and looks each row's organization up in its (nearly always
 * empty) result; meanwhile every row takes its stored labels and values. Called per row, the
 * functions cost a probe each (a page of tasks: 0.7 ms became 3.8 ms), and one organization's
 * removal does not slow another's reads.
 */
export const removalsPending = (t: string) => `(${t}organization_id in (select organization_id from removals))`;
export const shownLabelsSql = (t: string) => `(case when ${removalsPending(t)} then shown_labels(${t}organization_id, ${t}label_ids) else ${t}label_ids end)`;
export const shownCustomSql = (t: string) =>
  `(case when ${removalsPending(t)} then shown_custom_fields(${t}organization_id, ${t}custom_fields) else ${t}custom_fields end)`;
/** Milliseconds cut, not rounded, in both renderings. */
const instantSql = (column: string) => (t: string) => `to_char(${t}${column} at time zone 'UTC', ${ISO_SQL})`;
/** Null stays null (`'T-' || null` is null). */
const idSql = (column: string) => (t: string) => `'T-' || ${t}${column}`;

export const CONTENT_RENDERINGS: { [K in TaskContentField]: FieldRendering<K, ContentColumns> } = {
  title: { sql: (t) => `${t}title`, of: (r) => r.title },
  description: { sql: (t) => `${t}description`, of: (r) => r.description },
  status: { sql: (t) => `${t}status`, of: (r) => r.status },
  priority: { sql: (t) => `${t}priority`, of: (r) => r.priority },
  start_date: { sql: instantSql("start_date"), of: (r) => (r.start_date ? iso(r.start_date) : null) },
  due_date: { sql: instantSql("due_date"), of: (r) => (r.due_date ? iso(r.due_date) : null) },
  notes: { sql: (t) => `${t}notes`, of: (r) => r.notes },
  story_points: {
    sql: (t) => `${t}story_points`,
    of: (r) => (r.story_points === null ? null : Number(r.story_points)),
    // numeric writes 0.0000001 where JavaScript writes 1e-7 (under 1e-6).
    reencodeWhen: (t) => `(${t}story_points > 0 and ${t}story_points < 0.000001)`,
  },
  project_ids: { sql: (t) => `${t}project_ids`, of: (r) => r.project_ids },
  assignee_ids: { sql: (t) => `${t}assignee_ids`, of: (r) => r.assignee_ids },
  // A label being removed from every task is never shown (migration 0020).
  label_ids: { sql: shownLabelsSql, of: (r) => r.label_ids },
  custom_fields: {
    sql: shownCustomSql,
    of: (r) => r.custom_fields,
    // jsonb is written with a space after `:` and `,`.
    reencodeWhen: (t) => `${t}custom_fields <> '{}'::jsonb`,
  },
  recurrence: {
    sql: (t) => `${t}recurrence`,
    of: (r) => r.recurrence,
    // jsonb is written with a space after `:` and `,`.
    reencodeWhen: (t) => `${t}recurrence is not null`,
  },
};

export const TASK_RENDERINGS: { [K in keyof Task]: FieldRendering<K, TaskRow> } = {
  id: { sql: idSql("number"), of: (r) => taskId(r.number) },
  version: { sql: (t) => `${t}version`, of: (r) => r.version },
  ...CONTENT_RENDERINGS,
  owner_id: { sql: (t) => `${t}owner_user_id`, of: (r) => r.owner_user_id },
  parent_task_id: { sql: idSql("parent_number"), of: (r) => (r.parent_number === null ? null : taskId(r.parent_number)) },
  archived: { sql: (t) => `${t}archived`, of: (r) => r.archived },
  series_task_id: { sql: idSql("series_head"), of: (r) => (r.series_head === null ? null : taskId(r.series_head)) },
  occurrence_date: { sql: (t) => `${t}series_slot::text`, of: (r) => r.series_slot },
  created_at: { sql: instantSql("created_at"), of: (r) => iso(r.created_at) },
  updated_at: { sql: instantSql("updated_at"), of: (r) => iso(r.updated_at) },
};
