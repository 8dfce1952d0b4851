import type { CreateTaskBody } from "@tasksvc/contracts";
import { type Content, toIsoOrNull } from "../repo/task-json.js";
import type { CustomValues } from "./custom-values.js";
import { normalizeRecurrence } from "./recurrence/rrule.js";
import { firstSlot, localDay } from "./recurrence/slots.js";

/** What the references of a create came to once checked (or made, by an import). */
export interface ResolvedRefs {
  projectIds: string[];
  parent: number | null;
  custom: CustomValues;
}

/** A new task's content from a create body: one builder for the create route and for imports. */
export function createdContent(b: CreateTaskBody, refs: ResolvedRefs, now: Date): Content {
  const recurrence = b.recurrence ? normalizeRecurrence(b.recurrence) : null;
  // A recurring task heads its series as its first occurrence: without a due date of its own it is due on its slot.
  const firstDay = recurrence === null ? null : firstSlot(recurrence, localDay(now, recurrence.timezone));
  return {
    title: b.title,
    description: b.description ?? null,
    status: b.status ?? "TODO",
    priority: b.priority ?? null,
    start_date: toIsoOrNull(b.start_date ?? null),
    due_date: toIsoOrNull(b.due_date ?? firstDay),
    notes: b.notes ?? null,
    story_points: b.story_points ?? null,
    recurrence,
    project_ids: refs.projectIds,
    assignee_ids: b.assignee_ids ?? [],
    label_ids: b.label_ids ?? [],
    custom_fields: refs.custom,
    parent_number: refs.parent,
  };
}
