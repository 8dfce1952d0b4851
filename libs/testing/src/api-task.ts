import type { Task } from "@tasksvc/contracts";

/** A task in the API shape, every optional field empty: the `data` of a valid task event in tests. */
export function apiTask(title: string, overrides: Partial<Task> = {}): Task {
  return {
    id: "T-1",
    version: 1,
    title,
    description: null,
    status: "TODO",
    priority: null,
    start_date: null,
    due_date: null,
    notes: null,
    story_points: null,
    project_ids: [],
    owner_id: "usr_1",
    assignee_ids: [],
    label_ids: [],
    custom_fields: {},
    parent_task_id: null,
    archived: false,
    recurrence: null,
    series_task_id: null,
    occurrence_date: null,
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}
