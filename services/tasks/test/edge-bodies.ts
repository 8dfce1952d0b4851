import type { CreateTaskBody } from "@tasksvc/contracts";
import { CreateTaskBody as CreateTaskBodySchema } from "@tasksvc/contracts";

/**
 * Creates that hold every task field, empty or full, with the edge values each has: what two
 * renderings of a task (Postgres' JSON and TypeScript's) must write alike.
 */
export function edgeBodies(project: string, other: string, parent: string): CreateTaskBody[] {
  const bodies: CreateTaskBody[] = [
    { title: "bare" },
    {
      title: 'Quotes " \\ and 🚀 ünïcode',
      description: "d",
      status: "IN_PROGRESS",
      priority: "HIGH",
      start_date: "2026-03-29T01:30:00.5+02:00",
      due_date: "2026-12-31",
      notes: "line one\nline two \u2028 \t tab </script> \u0001 \u001f \u007f \b\f\r ': '",
      story_points: 0.5,
      project_ids: [project, other],
      parent_task_id: parent,
      recurrence: { frequency: "WEEKLY", interval: 2, by_weekday: [1, 3], timezone: "Europe/Berlin" },
    },
    { title: "points", story_points: 13, priority: "LOW", status: "COMPLETED", due_date: "2024-02-29" },
    { title: "one project", project_id: project, start_date: "1999-12-31T23:59:59.999Z", due_date: "2030-01-01T23:59:59.999-05:00" },
    // Story points JavaScript writes in exponent form, at the edge of it, and plain.
    { title: "tiny", story_points: 1e-7 },
    { title: "tinier", story_points: 2.5e-10 },
    { title: "edge", story_points: 0.000001 },
    { title: "zero", story_points: 0 },
    { title: "most", story_points: 1000 },
    { title: "long fraction", story_points: 0.1 + 0.2 },
    { title: "daily", recurrence: { frequency: "DAILY" } },
  ];
  return bodies.map((b) => CreateTaskBodySchema.parse(b));
}
