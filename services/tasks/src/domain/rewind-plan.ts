import { type RewindItem, TASK_FIELDS, type TaskChanges, type TaskContentField, taskId } from "@tasksvc/contracts";
import type { VersionRow } from "../repo/rewinds-repo.js";
import { CONTENT_RENDERINGS, type ContentColumns, type TaskRow } from "../repo/task-fields.js";

/** The fields a version records; the parent, the archived state and the owner are not among them, so an undo never touches them. */
const FIELDS = TASK_FIELDS.filter((f): f is TaskContentField => f in CONTENT_RENDERINGS);

const shownField = (r: ContentColumns, f: TaskContentField): unknown => CONTENT_RENDERINGS[f].of(r);
const same = (a: ContentColumns, b: ContentColumns, f: TaskContentField) => JSON.stringify(shownField(a, f)) === JSON.stringify(shownField(b, f));

export interface PlannedTask {
  number: number;
  item: RewindItem;
  /** The task now (locked inside an undo). */
  row?: TaskRow;
  /** For a revert: the fields to restore and the version they are restored from. */
  restore?: { fields: TaskContentField[]; from: ContentColumns };
}

export interface PlanInput {
  tasks: readonly { number: number; first: number }[];
  versions: readonly VersionRow[];
  rows: ReadonlyMap<number, TaskRow & { in_trash: boolean }>;
  withOtherSubtasks: ReadonlySet<number>;
}

const skip = (number: number, version: number, reason: RewindItem["reason"]): PlannedTask => ({
  number,
  item: { task_id: taskId(number), action: "skip", reason, from_version: version, to_version: null, changes: {} },
});

/**
 * For each task the match's writes changed: restore each field to its value before the first
 * matching write, unless a write the match does not cover changed it since; a task the match
 * created goes to the trash unless such a write changed it since. Erased tasks have no row and are left out.
 */
export function planTasks(p: PlanInput): PlannedTask[] {
  const byTask = new Map<number, VersionRow[]>();
  for (const v of p.versions) {
    const n = Number(v.task_number);
    const list = byTask.get(n) ?? [];
    list.push(v);
    byTask.set(n, list);
  }
  const out: PlannedTask[] = [];
  for (const t of p.tasks) {
    const row = p.rows.get(t.number);
    const versions = byTask.get(t.number) ?? [];
    const last = versions[versions.length - 1];
    if (row === undefined || last === undefined) continue;
    if (row.in_trash) {
      out.push(skip(t.number, row.version, "in_trash"));
      continue;
    }
    const later = versions.filter((v) => v.seq > t.first);
    if (t.first === 1) {
      if (later.some((v) => !v.matches)) out.push(skip(t.number, row.version, "changed_since"));
      else if (p.withOtherSubtasks.has(t.number)) out.push(skip(t.number, row.version, "has_subtasks"));
      else
        out.push({
          number: t.number,
          row,
          item: { task_id: taskId(t.number), action: "trash", reason: null, from_version: row.version, to_version: null, changes: {} },
        });
      continue;
    }
    const before = versions.find((v) => v.seq === t.first - 1);
    if (before === undefined) continue;
    const conflicted = new Set<TaskContentField>();
    for (const [i, v] of versions.entries()) {
      const prev = versions[i - 1];
      if (v.seq <= t.first || v.matches || prev === undefined) continue;
      for (const f of FIELDS) if (!same(v, prev, f)) conflicted.add(f);
    }
    const fields = FIELDS.filter((f) => !conflicted.has(f) && !same(last, before, f));
    if (fields.length === 0) {
      out.push(skip(t.number, row.version, conflicted.size > 0 ? "changed_since" : null));
      continue;
    }
    const changes: TaskChanges = {};
    for (const f of fields) changes[f] = { from: shownField(last, f), to: shownField(before, f) };
    out.push({
      number: t.number,
      row,
      restore: { fields, from: before },
      item: { task_id: taskId(t.number), action: "revert", reason: null, from_version: row.version, to_version: null, changes },
    });
  }
  return out;
}
