import type { ExportLine } from "../../repo/export-reads.js";
import { compactJson } from "../../repo/task-json.js";
import { type Comment, type CustomField, type CustomFieldValue, type Task, taskId } from "@tasksvc/contracts";

// What the lines and rows of an export hold: the one builder of each, beside the rule that says
// which users a line names (they get member lines, before everything else). Task and version
// lines are built by Postgres (export-reads.ts), from the same field table as the API's answers.

export type Line = { object: string } & Record<string, unknown>;

export const memberLine = (id: string, email: string): Line => ({ object: "member", id, email, name: null });
export const fieldLine = (f: CustomField): Line => ({ object: "custom_field", ...f });
export const labelLine = (l: object): Line => ({ object: "label", ...l });
export const projectLine = (p: object): Line => ({ object: "project", ...p });
/** Lines Postgres built, with their `object` put first; the people they name join `people`. */
export function exportLines(object: "task" | "task_version", lines: readonly ExportLine[], people: Set<string>): string[] {
  return lines.map((l) => {
    for (const u of l.users) people.add(u);
    const json = l.reencode ? compactJson(l.json) : l.json;
    return `{"object":"${object}",${json.slice(1)}\n`;
  });
}

/** The dependencies API's names: `task_id` is blocked by `blocker_task_id`. */
export const dependencyLine = (blocked: number, blocker: number): Line => ({
  object: "dependency",
  task_id: taskId(blocked),
  blocker_task_id: taskId(blocker),
});
export const commentLine = (c: Comment): Line => ({ object: "comment", ...c });

/** The keys of the organization's `user` fields: their values are user ids. */
export function userFieldKeys(fields: readonly CustomField[]): Set<string> {
  return new Set(fields.filter((f) => f.type === "user").map((f) => f.key));
}

/** Every user a task or a version names: its owner, its assignees, the values of its user fields. */
export function usersOf(t: Pick<Task, "owner_id" | "assignee_ids" | "custom_fields">, userKeys: ReadonlySet<string>, into: Set<string>): void {
  into.add(t.owner_id);
  for (const a of t.assignee_ids) into.add(a);
  for (const k of userKeys) {
    const v = t.custom_fields[k];
    if (typeof v === "string") into.add(v);
  }
}

export function usersOfComment(c: Comment, into: Set<string>): void {
  into.add(c.author_id);
  for (const m of c.mention_ids) into.add(m);
}

/** Resolves ids to what a CSV cell shows; an id it cannot resolve shows as nothing. */
export interface CsvNames {
  project(id: string): string | undefined;
  label(id: string): string | undefined;
  email(userId: string): string | undefined;
}

/** The columns the CSV import reads come first, with those names. */
export const CSV_COLUMNS = [
  "id",
  "title",
  "description",
  "status",
  "priority",
  "start_date",
  "due_date",
  "story_points",
  "project",
  "projects",
  "labels",
  "assignee",
  "assignees",
  "owner",
  "parent_task_id",
  "archived",
  "notes",
  "created_at",
  "updated_at",
] as const;

export function csvHeader(fields: readonly CustomField[]): string[] {
  return [...CSV_COLUMNS, ...fields.map((f) => `custom.${f.key}`)];
}

const known = (values: Array<string | undefined>): string[] => values.filter((v): v is string => v !== undefined);

/**
 * One task's row. `project` and `assignee` hold the first of each (what an importer takes), `projects`,
 * `labels` and `assignees` all of them joined by `;`; people by email, projects, labels and options by name.
 */
export function csvRow(t: Task, fields: readonly CustomField[], names: CsvNames): string[] {
  const projects = known(t.project_ids.map((p) => names.project(p)));
  const assignees = known(t.assignee_ids.map((a) => names.email(a)));
  const row: Record<(typeof CSV_COLUMNS)[number], string> = {
    id: t.id,
    title: t.title,
    description: t.description ?? "",
    status: t.status,
    priority: t.priority ?? "",
    start_date: t.start_date ?? "",
    due_date: t.due_date ?? "",
    story_points: t.story_points === null ? "" : String(t.story_points),
    project: projects[0] ?? "",
    projects: projects.join(";"),
    labels: known(t.label_ids.map((l) => names.label(l))).join(";"),
    assignee: assignees[0] ?? "",
    assignees: assignees.join(";"),
    owner: names.email(t.owner_id) ?? "",
    parent_task_id: t.parent_task_id ?? "",
    archived: String(t.archived),
    notes: t.notes ?? "",
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
  return [...CSV_COLUMNS.map((c) => row[c]), ...fields.map((f) => customCell(f, t.custom_fields[f.key], names))];
}

function customCell(f: CustomField, v: CustomFieldValue | undefined, names: CsvNames): string {
  if (v === undefined) return "";
  const option = (id: string) => f.options.find((o) => o.id === id)?.name;
  switch (f.type) {
    case "select":
      return typeof v === "string" ? (option(v) ?? "") : "";
    case "multi_select":
      return Array.isArray(v) ? known(v.map(option)).join(";") : "";
    case "user":
      return typeof v === "string" ? (names.email(v) ?? "") : "";
    case "text":
    case "url":
    case "date":
    case "number":
    case "checkbox":
      return Array.isArray(v) ? v.join(";") : String(v);
  }
}

/** The ids a chunk of tasks names that a CSV shows by name. */
export function csvRefs(tasks: readonly Task[], fields: readonly CustomField[]): { projects: Set<string>; labels: Set<string>; users: Set<string> } {
  const projects = new Set<string>();
  const labels = new Set<string>();
  const users = new Set<string>();
  const userKeys = userFieldKeys(fields);
  for (const t of tasks) {
    for (const p of t.project_ids) projects.add(p);
    for (const l of t.label_ids) labels.add(l);
    usersOf(t, userKeys, users);
  }
  return { projects, labels, users };
}
