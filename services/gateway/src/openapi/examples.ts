import { EXAMPLE_INSTANT } from "@tasksvc/contracts";

/**
 * An example belongs to an operation, not to its body's schema: each succeeds as is in a new
 * organization once T-1 and T-2 exist (test/e2e/docs-examples.test.ts sends every one), except a
 * registered attachment, whose file_key only comes from an upload.
 */
export const REQUEST_EXAMPLES: Record<string, Record<string, unknown>> = {
  createApiKey: { name: "CI deploys", scopes: ["tasks:read", "tasks:write"], expires_in_days: 30 },
  updateMember: { role: "admin" },
  createInvitation: { email: "ada@example.com", role: "member" },
  createOAuthClient: { name: "Nightly sync", scopes: ["tasks:read", "tasks:write"] },
  createTask: {
    title: "Write the announcement",
    description: "Everything for the November launch.",
    priority: "HIGH",
    due_date: "2026-11-30",
    story_points: 3,
  },
  searchTasks: {
    filter: {
      and: [
        { field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] },
        {
          or: [
            { field: "priority", op: "eq", value: "URGENT" },
            { field: "text", op: "matches", value: "announcement" },
          ],
        },
      ],
    },
    sort: "due_date",
    limit: 25,
  },
  updateTask: { status: "IN_PROGRESS", priority: "URGENT", notes: "Ask legal before publishing." },
  batchTasks: {
    operations: [
      { method: "create", body: { title: "Book the venue", priority: "HIGH", due_date: "2026-11-20" } },
      { method: "update", task_id: "T-1", body: { status: "IN_PROGRESS" }, if_match: '"1"' },
      { method: "archive", task_id: "T-2" },
    ],
  },
  addTaskDependency: { blocker_task_id: "T-2" },
  // A mention names a member by id, which a new organization's example cannot know.
  createComment: { body: "Ready for review: the draft is in the shared folder." },
  updateComment: { body: "Ready for review: the draft is in the shared folder (second version)." },
  startAttachmentUpload: { file_name: "notes.txt", content_type: "text/plain", size: 12 },
  registerAttachment: { file_name: "notes.txt", file_key: "att/org_3kTM…/upl_…", content_type: "text/plain", size: 12 },
  createExport: { format: "jsonl", include: ["tasks", "history", "comments", "projects", "labels", "custom_fields"] },
  startImportUpload: { file_name: "tasks.csv", content_type: "text/csv", size: 1048576 },
  createImport: { file_key: "imp/org_3kTM…/upl_…", format: "csv", dry_run: true },
  createRewind: { match: { credential_id: "key_5vN5Zu6nSVCjmB2jJBpwRY", since: "2026-11-23T09:00:00Z" }, dry_run: true },
  createProject: { name: "Launch", description: "Everything for the November launch." },
  updateProject: { name: "Launch v2" },
  createLabel: { name: "bug", color: "#d73a4a", description: "Something is not working." },
  updateLabel: { color: "#b60205", description: null },
  createCustomField: {
    key: "severity",
    name: "Severity",
    type: "select",
    options: [
      { name: "Critical", color: "#b60205" },
      { name: "Minor", color: "#0e8a16" },
    ],
    description: "How bad a bug is.",
  },
  updateCustomField: { name: "Bug severity", description: null },
  setDailyPlanSection: { section: "TODO", status: "PLANNED" },
  addDailyPlanEntry: { date: "2026-11-23", task_id: "T-1", section: "TODO" },
  createWebhookEndpoint: { url: "https://hooks.example.com/tasksvc", event_types: ["task.created", "task.updated"] },
  updateWebhookEndpoint: { event_types: ["task.created", "task.updated", "task.archived"], enabled: true },
  sendWebhookTestEvent: { event_type: "task.created" },
  replayFailedWebhookDeliveries: { since: EXAMPLE_INSTANT },
  readAllNotifications: { before: EXAMPLE_INSTANT },
};

export const REQUEST_EXAMPLE_NOTES: Record<string, { name: string; text: { summary: string; description: string } }> = {
  createImport: {
    name: "afterUpload",
    text: {
      summary: "After an upload: put its file_key here",
      description:
        "Not sendable as is: `file_key` must come from a finished upload. Start one (POST /v1/imports/uploads), PUT the file's bytes to its `upload_url`, then send its `file_key` here.",
    },
  },
  registerAttachment: {
    name: "afterUpload",
    text: {
      summary: "After an upload: put its file_key here",
      description:
        "Not sendable as is: `file_key` must come from a finished upload. Start one (POST /v1/tasks/{task_id}/attachments/uploads), PUT the bytes to its `upload_url`, then send its `file_key` here with the same file name, type and size.",
    },
  },
};
