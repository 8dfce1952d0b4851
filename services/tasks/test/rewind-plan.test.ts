import { describe, expect, it } from "vitest";
import { planTasks } from "../src/domain/rewind-plan.js";
import type { VersionRow } from "../src/repo/rewinds-repo.js";
import type { TaskRow } from "../src/repo/task-json.js";

// The undo's plan for one task, from its versions: which fields go back, which are left because a
// write the match does not cover changed them since, and when there is nothing to do.

const base: Omit<VersionRow, "seq" | "matches"> = {
  task_number: "7",
  title: "t",
  description: null,
  status: "TODO",
  priority: null,
  start_date: null,
  due_date: null,
  notes: null,
  story_points: null,
  project_ids: [],
  assignee_ids: [],
  label_ids: [],
  custom_fields: {},
  recurrence: null,
};
const v = (seq: number, matches: boolean, over: Partial<VersionRow> = {}): VersionRow => ({ ...base, seq, matches, ...over });
const row = (version: number, inTrash = false) => ({ number: "7", version, in_trash: inTrash }) as unknown as TaskRow & { in_trash: boolean };

function plan(first: number, versions: VersionRow[], version = versions.length, inTrash = false) {
  const [p] = planTasks({ tasks: [{ number: 7, first }], versions, rows: new Map([[7, row(version, inTrash)]]), withOtherSubtasks: new Set() });
  return p?.item;
}

describe("the plan of an undo", () => {
  it("when a matching write changed two fields and a later one of someone else one of them, then only the other goes back", () => {
    const item = plan(2, [v(1, false), v(2, true, { status: "COMPLETED", priority: "HIGH" }), v(3, false, { status: "COMPLETED", priority: "LOW" })]);
    expect(item).toEqual({
      task_id: "T-7",
      action: "revert",
      reason: null,
      from_version: 3,
      to_version: null,
      changes: { status: { from: "COMPLETED", to: "TODO" } },
    });
  });

  it("when someone else changed a field before the matching write, then that change stays and the matching one goes", () => {
    const item = plan(3, [v(2, false, { title: "theirs" }), v(3, true, { title: "agent's" })]);
    expect(item?.changes).toEqual({ title: { from: "agent's", to: "theirs" } });
  });

  it("when the matching writes changed a field and put it back themselves, then it is a skip without a reason", () => {
    const item = plan(2, [v(1, false), v(2, true, { notes: "x" }), v(3, true, { notes: null })]);
    expect([item?.action, item?.reason]).toEqual(["skip", null]);
  });

  it("when every field the matching writes changed was changed since by someone else, then a skip, changed_since", () => {
    const item = plan(2, [v(1, false), v(2, true, { story_points: "3" }), v(3, false, { story_points: "5" })]);
    expect([item?.action, item?.reason, item?.changes]).toEqual(["skip", "changed_since", {}]);
  });

  it("when the matching writes created the task, then trash, unless someone else wrote it since; a task in the trash is skipped", () => {
    expect(plan(1, [v(1, true), v(2, true, { title: "again" })])?.action).toBe("trash");
    expect(plan(1, [v(1, true), v(2, false, { title: "theirs" })])).toMatchObject({ action: "skip", reason: "changed_since" });
    expect(plan(2, [v(1, false), v(2, true, { title: "x" })], 2, true)).toMatchObject({ action: "skip", reason: "in_trash" });
  });
});
