// Generated from docs/openapi.json by scripts/idempotent-operations.mjs: do not edit.
/** The operations that take an Idempotency-Key ("METHOD /path/{param}"): a retry of one of them makes no twin. */
export const IDEMPOTENT_OPERATIONS: ReadonlySet<string> = new Set([
  "PATCH /v1/tasks/{task_id}",
  "POST /v1/api-keys",
  "POST /v1/custom-fields",
  "POST /v1/daily-plan/entries",
  "POST /v1/imports",
  "POST /v1/imports/uploads",
  "POST /v1/invitations",
  "POST /v1/labels",
  "POST /v1/projects",
  "POST /v1/tasks",
  "POST /v1/tasks/batch",
  "POST /v1/tasks/{task_id}/archive",
  "POST /v1/tasks/{task_id}/attachments",
  "POST /v1/tasks/{task_id}/attachments/uploads",
  "POST /v1/tasks/{task_id}/comments",
  "POST /v1/tasks/{task_id}/dependencies",
  "POST /v1/tasks/{task_id}/unarchive",
  "POST /v1/webhook-endpoints",
  "POST /v1/webhook-endpoints/{endpoint_id}/rotate-secret",
]);
