import { inChangesOrder, inDataOrder, Task, TASK_FIELDS, TaskVersion } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { changesOf } from "../src/domain/events/changes.js";
import type { TaskRow } from "../src/repo/task-fields.js";
import { actorOfRow } from "../src/repo/version-stamp.js";
import { shownVersion, TASK_JSON, TEMPLATE_COMPLETION, taskTemplate, toTask } from "../src/repo/task-json.js";

// One table of a task's fields: the contract's shape gives them and their order, and every
// rendering (TypeScript, Postgres' JSON, the create's template, a parse by the contract, the
// changes, a version) shows them in that one order. Pure: the bytes themselves are held equal on
// Postgres by task-json.test.ts.

const row: TaskRow = {
  number: "12",
  owner_user_id: "usr_fields",
  parent_number: "3",
  archived: true,
  current_version_id: "ver_fields",
  version_count: 2,
  version: 4,
  series_head: "7",
  series_slot: "2026-03-01",
  title: "Fields",
  description: "d",
  status: "IN_PROGRESS",
  priority: "HIGH",
  start_date: new Date("2026-03-01T09:00:00.123Z"),
  due_date: new Date("2026-03-02T00:00:00.000Z"),
  notes: "n",
  story_points: "2.5",
  recurrence: {
    frequency: "DAILY",
    interval: 1,
    by_weekday: [],
    by_month_day: null,
    basis: "SCHEDULE",
    timezone: "UTC",
    start_date: null,
    end_date: null,
    max_occurrences: null,
    rollover_enabled: false,
    active: true,
    rrule: "FREQ=DAILY",
  },
  project_ids: ["prj_a"],
  assignee_ids: ["usr_b", "usr_a"],
  label_ids: ["lbl_b", "lbl_a"],
  custom_fields: { n: 2, ab: "x", done: true },
  created_at: new Date("2026-02-01T00:00:00.000Z"),
  updated_at: new Date("2026-03-01T10:00:00.000Z"),
  cursor_at: "",
};

/** A copy with its keys as jsonb stores them: by length, then bytes. */
const asJsonb = <T extends object>(v: T): T =>
  Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))) as T;

describe("a task's field table", () => {
  it("when a task is rendered, then TypeScript, Postgres' JSON and the event stream's restoring all take the contract's order", () => {
    expect(Object.keys(Task.shape)).toEqual(TASK_FIELDS);
    expect(Object.keys(toTask(row))).toEqual(TASK_FIELDS);
    expect([...TASK_JSON.matchAll(/ as "(\w+)"/g)].map((m) => m[1])).toEqual(TASK_FIELDS);
    expect(Object.keys(inDataOrder("task.updated", asJsonb(toTask(row))))).toEqual(TASK_FIELDS);
    // The create's template and what its statement adds make the whole task, nothing twice.
    const added = [...TEMPLATE_COMPLETION.matchAll(/(?:\(|, )'(\w+)', /g)].map((m) => m[1] ?? "");
    expect([...Object.keys(taskTemplate("usr_fields", { ...shownVersion(row), story_points: 2.5, parent_number: 3 })), ...added].sort()).toEqual(
      [...TASK_FIELDS].sort(),
    );
  });

  it("when a task is parsed by its contract (a batch item read by call()), then its keys keep their order", () => {
    const task = toTask(row);
    expect(JSON.stringify(Task.parse(task))).toBe(JSON.stringify(task));
  });

  it("when a change is computed, and when it comes back from jsonb, then its fields are in the task's order", () => {
    const before = toTask({ ...row, version: 3, parent_number: null, recurrence: null, updated_at: new Date("2026-02-15T00:00:00.000Z") });
    const changes = changesOf(before, toTask(row));
    expect(Object.keys(changes)).toEqual(["version", "recurrence", "parent_task_id", "updated_at"]);
    expect(JSON.stringify(inChangesOrder(asJsonb(changes)))).toBe(JSON.stringify(changes));
  });

  it("when a version is shown, then its fields are in its contract's order: id, version, the content and the owner in the task's order, created_at, actor", () => {
    const actor = actorOfRow({ actor_type: "api_key", actor_id: "key_fields", actor_user_id: "usr_fields" });
    expect(actor).toEqual({ type: "api_key", id: "key_fields", user_id: "usr_fields" });
    expect(actorOfRow({ actor_type: null, actor_id: null, actor_user_id: null })).toBeNull();
    const item = { id: "ver_fields", version: 4, ...shownVersion(row), created_at: "2026-03-01T10:00:00.000Z", actor };
    expect(Object.keys(TaskVersion.shape)).toEqual(Object.keys(item));
    expect(Object.keys(shownVersion(row))).toEqual(TASK_FIELDS.filter((k) => k in shownVersion(row)));
    expect(shownVersion(row)).toMatchObject({ owner_id: "usr_fields", assignee_ids: ["usr_b", "usr_a"] });
    expect(JSON.stringify(TaskVersion.parse(item))).toBe(JSON.stringify(item));
  });
});
