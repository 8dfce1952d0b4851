/**
 * What each field of the public API means, with an example: the OpenAPI document's field
 * descriptions (services/gateway openapi.ts fills every property of every schema from here; a
 * test fails on a field with none). Keyed by field name, since a name means one thing across the
 * API (`created_at`, `next_cursor`); `<Component>.<field>` where one schema means something more
 * specific. Kept beside the schemas, as data, so the schemas stay readable.
 */
export interface FieldDoc {
  description: string;
  example: unknown;
}

const T = "2026-11-23T09:30:00.000Z";

export const FIELD_DOCS: Record<string, FieldDoc> = {
  // -- common ---------------------------------------------------------------------------------
  id: { description: "The object's id: opaque, stable, unique in its kind.", example: "prj_5vN5Zu6nSVCjmB2jJBpwRY" },
  created_at: { description: "When it was created (UTC, ISO 8601).", example: T },
  updated_at: { description: "When it last changed (UTC, ISO 8601).", example: T },
  data: { description: "The items of this page, in the list's order.", example: [] },
  has_more: { description: "Whether another page follows: ask for it with `after=<next_cursor>`.", example: false },
  next_cursor: { description: "Opaque cursor of the next page (pass as `after`), or null on the last page.", example: null },
  deleted: { description: "Always true: the object is gone.", example: true },
  name: { description: "A display name, unique where the resource says so.", example: "Launch" },
  description: { description: "Free text (line breaks kept); null when none.", example: "Everything for the November launch." },
  title: { description: "A short single-line title.", example: "Write the announcement" },
  status: { description: "The state it is in.", example: "TODO" },
  url: { description: "An https URL.", example: "https://hooks.example.com/tasksvc" },
  expires_at: { description: "When it stops working (UTC, ISO 8601).", example: T },
  plan: { description: "The organization's plan: what it may use and how much.", example: "pro" },
  // -- organizations, members, keys, usage ------------------------------------------------------
  "Organization.id": { description: "The organization's id.", example: "org_3kTMd92jf7Qw1xYp8LmN2a" },
  "Organization.name": { description: "The organization's name.", example: "Acme" },
  user_id: { description: "The user's id.", example: "usr_7hQ2mD9xK3pL5nB8vR4tW1" },
  email: { description: "The user's email address (their identity in the organization).", example: "ada@example.com" },
  role: { description: "The member's role: owner, admin or member (owners and admins manage keys).", example: "member" },
  "ApiKey.id": { description: "The key's id (not the secret): use it to revoke the key.", example: "key_2bN8xQ4mT7pL1vD9kR3sW6" },
  "ApiKey.name": { description: "What the key is for, as its creator named it.", example: "CI deploys" },
  "CreatedApiKey.id": { description: "The key's id (not the secret): use it to revoke the key.", example: "key_2bN8xQ4mT7pL1vD9kR3sW6" },
  "CreatedApiKey.name": { description: "What the key is for, as its creator named it.", example: "CI deploys" },
  "RevokeApiKeyResponse.id": { description: "The revoked key's id.", example: "key_2bN8xQ4mT7pL1vD9kR3sW6" },
  key_prefix: { description: "The first characters of the secret, to recognise a key in logs and lists.", example: "svc_live_4f9a" },
  scopes: { description: "What the key may do: one or more scopes.", example: ["tasks:read", "tasks:write"] },
  last_used_at: { description: "When the key last authenticated a request; null when never.", example: T },
  "ApiKey.expires_at": { description: "When the key stops working; null when it never expires.", example: null },
  "CreatedApiKey.expires_at": { description: "When the key stops working; null when it never expires.", example: null },
  legacy: { description: "True for a key made before scopes existed (it keeps full access; revoking it soft-revokes).", example: false },
  key: { description: "The API key itself: shown only in this answer, store it now. Send it as `Authorization: Bearer <key>`.", example: "svc_live_4f9a…" },
  test_mode: { description: "Mint a sandbox key (`svc_test_…`) instead of a live one.", example: false },
  expires_in_days: { description: "Days until the key expires (1-3650); never when absent.", example: 30 },
  period_start: { description: "Start of the current billing period (UTC).", example: "2026-11-01T00:00:00.000Z" },
  period_end: { description: "End of the current billing period (UTC): the allowance renews then.", example: "2026-12-01T00:00:00.000Z" },
  calls_used: { description: "API calls counted in this billing period.", example: 1234 },
  calls_allowance: { description: "API calls the plan allows per billing period.", example: 1000000 },
  burst: {
    description: "The per-credential burst limit now: requests allowed per window, left in this one, and when it resets.",
    example: { limit: 100, window_seconds: 1, remaining: 99, reset_at: T },
  },
  "Burst.limit": { description: "Requests a credential may make per window.", example: 100 },
  "Burst.window_seconds": { description: "The window's length in seconds.", example: 1 },
  "Burst.remaining": { description: "Requests left in the current window.", example: 99 },
  "Burst.reset_at": { description: "When the current window ends.", example: T },
  storage_used: { description: "Bytes of attachments stored, plus uploads started and not yet expired.", example: 3145728 },
  storage_allowance: { description: "Bytes of attachments the plan allows.", example: 10737418240 },
  max_file_size: { description: "The largest single attachment the plan allows, in bytes.", example: 104857600 },
  // -- tasks ------------------------------------------------------------------------------------
  "Task.id": { description: "The task's id: T-<n>, numbered per organization from 1.", example: "T-42" },
  "TaskVersion.id": { description: "The version's id.", example: "ver_6yH3nK8pQ2mT5vL9xD4rW7" },
  "Task.status": { description: "Where the task stands.", example: "IN_PROGRESS" },
  "TaskVersion.status": { description: "Where the task stood in this version.", example: "IN_PROGRESS" },
  priority: { description: "How urgent the task is.", example: "HIGH" },
  start_date: { description: "When work starts (UTC); null when unset.", example: "2026-11-24T09:00:00.000Z" },
  due_date: { description: "When it is due (UTC); null when unset.", example: "2026-11-30T17:00:00.000Z" },
  notes: { description: "Free-form notes (line breaks kept); null when none.", example: "Ask legal before publishing." },
  story_points: { description: "An estimate in story points; null when unset.", example: 3 },
  project_ids: { description: "The projects the task belongs to.", example: ["prj_5vN5Zu6nSVCjmB2jJBpwRY"] },
  project_id: { description: "One project to put the task in (shorthand for a one-element project_ids).", example: "prj_5vN5Zu6nSVCjmB2jJBpwRY" },
  parent_task_id: { description: "The parent task when this is a subtask; null for a top-level task.", example: "T-7" },
  series_task_id: {
    description: "The recurring task this occurrence was made from (the series' head); null for every other task, the head included.",
    example: "T-12",
  },
  occurrence_date: { description: "The series' day this occurrence was made for (YYYY-MM-DD); null when series_task_id is.", example: "2026-11-25" },
  archived: { description: "Whether the task is archived (hidden from lists unless asked for).", example: false },
  recurrence: {
    description: "How the task repeats; null when it does not.",
    example: { frequency: "WEEKLY", interval: 1, by_weekday: [1, 4], timezone: "Europe/Paris" },
  },
  "Task.recurrence": { description: "How the task repeats (the rule with its RRULE form); null when it does not.", example: null },
  "TaskVersion.recurrence": { description: "How the task repeated in this version; null when it did not.", example: null },
  "CreateTaskRequest.due_date": { description: "When it is due: a day (YYYY-MM-DD) or a date-time.", example: "2026-11-30" },
  "UpdateTaskRequest.due_date": { description: "When it is due: a day (YYYY-MM-DD) or a date-time; null clears it.", example: "2026-11-30" },
  task_id: { description: "A task's id (T-<n>).", example: "T-42" },
  "CreateTaskRequest.title": { description: "The task's title (single line, 1-500 characters).", example: "Write the announcement" },
  // -- recurrence ---------------------------------------------------------------------------------
  frequency: { description: "The unit it repeats by.", example: "WEEKLY" },
  interval: { description: "Every how many units (1 = every week for WEEKLY).", example: 1 },
  by_weekday: { description: "On which weekdays (WEEKLY), 1 = Monday … 7 = Sunday.", example: [1, 4] },
  by_month_day: { description: "On which day of the month (MONTHLY).", example: 15 },
  basis: { description: "Whether the next occurrence counts from the schedule or from the last completion.", example: "SCHEDULE" },
  timezone: { description: "The IANA time zone its days are counted in.", example: "Europe/Paris" },
  "Recurrence.start_date": { description: "The first day it may occur (YYYY-MM-DD).", example: "2026-11-23" },
  end_date: { description: "The last day it may occur (YYYY-MM-DD); open-ended when absent or null.", example: "2027-06-30" },
  max_occurrences: { description: "How many times at most; unlimited when absent or null.", example: 10 },
  rollover_enabled: {
    description:
      "Whether an occurrence still unfinished after its day goes onto its owner's daily board for each following day, until it is done or the next occurrence comes.",
    example: false,
  },
  active: { description: "Whether the recurrence is running.", example: true },
  rrule: { description: "The same rule as an RFC 5545 RRULE string.", example: "FREQ=WEEKLY;INTERVAL=1;BYDAY=MO,TH" },
  // -- dependencies ---------------------------------------------------------------------------------
  "DependencyItem.status": { description: "The linked task's status.", example: "TODO" },
  open: { description: "Whether the linked task is not completed yet (an open blocker blocks).", example: true },
  is_blocked: { description: "Whether any blocker of this task is still open.", example: true },
  blocked_by_count: { description: "How many open tasks block this one.", example: 1 },
  blocking_count: { description: "How many tasks this one blocks.", example: 0 },
  blocked_by: { description: "The tasks that block this one.", example: [] },
  blocking: { description: "The tasks this one blocks.", example: [] },
  blocker_task_id: { description: "The task that blocks this one.", example: "T-41" },
  // -- projects ---------------------------------------------------------------------------------------
  "Project.name": { description: "The project's name, unique in the organization (compared trimmed).", example: "Launch" },
  "CreateProjectRequest.name": { description: "The project's name, unique in the organization (compared trimmed).", example: "Launch" },
  "UpdateProjectRequest.name": { description: "A new name, unique in the organization.", example: "Launch v2" },
  // -- attachments -------------------------------------------------------------------------------------
  "Attachment.id": { description: "The attachment's id.", example: "att_9pL2xQ7mT4vK1nD8bR5sW3" },
  file_name: { description: "The file's name, as given at upload (sent back in Content-Disposition).", example: "notes.txt" },
  content_type: { description: "The file's media type.", example: "text/plain" },
  size: { description: "The file's size in bytes.", example: 12 },
  upload_url: {
    description: "Where to send the bytes: PUT exactly `size` bytes here before `expires_at`.",
    example: "https://api.example.com/v1/uploads/eyJ…",
  },
  upload_method: { description: "The HTTP method for upload_url.", example: "PUT" },
  file_key: { description: "The uploaded object's key: register it as an attachment after the PUT.", example: "att/org_3kTM…/upl_…" },
  download_url: { description: "A short-lived link answering the file's bytes.", example: "https://api.example.com/v1/downloads/eyJ…" },
  // -- daily plan ---------------------------------------------------------------------------------------
  date: { description: "The UTC day (YYYY-MM-DD).", example: "2026-11-23" },
  sections: { description: "The day's sections in order: TODO, PROGRESS, DONE.", example: [] },
  section: { description: "A section of the day's board.", example: "TODO" },
  "DailyPlanSection.status": { description: "How the section's planning stands: NOT_FILLED, FILLING, PLANNED or COMPLETED.", example: "FILLING" },
  "SetDailyPlanSectionRequest.status": { description: "The section's new planning status.", example: "COMPLETED" },
  "SetDailyPlanSectionResponse.status": { description: "The section's planning status.", example: "COMPLETED" },
  entries: { description: "The tasks placed on the section, in the order they were placed.", example: [] },
  "DailyPlanEntry.id": { description: "The entry's id: use it to remove the entry.", example: "ent_4mT8xQ2pL6vK9nD1bR3sW7" },
  "DailyPlanEntry.title": { description: "The task's title when the entry was read.", example: "Write the announcement" },
  "DailyPlanEntry.status": { description: "The task's status when the entry was read.", example: "TODO" },
  // -- webhooks -------------------------------------------------------------------------------------------
  "WebhookEndpoint.id": { description: "The endpoint's id.", example: "whe_8kQ3mT6pL2vX9nD4bR7sW1" },
  enabled: { description: "Whether deliveries are sent (false after auto-disable or by choice).", example: true },
  event_types: { description: "The event types delivered; all when absent or empty.", example: ["task.created", "task.updated"] },
  verified: { description: "Whether the endpoint answered a verification probe with a 2xx.", example: true },
  disabled_reason: { description: "Why it was disabled automatically; null when enabled or disabled by hand.", example: null },
  secret: {
    description: "The signing secret (`whsec_…`): shown only in this answer. Verify each delivery's `webhook-signature` with it.",
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  },
  previous_secret_expires_at: { description: "Until when the previous secret still signs too (both signatures are sent).", example: T },
  event_id: { description: "The event's id: the `webhook-id` header of every attempt of it.", example: "evt_2nK7xQ4mT9pL3vD6bR8sW5" },
  event_type: { description: "The event's type.", example: "task.created" },
  "Event.id": { description: "The event's id: the `webhook-id` header of every delivery of it.", example: "evt_2nK7xQ4mT9pL3vD6bR8sW5" },
  "Event.type": { description: "What happened: task.created, task.updated or task.archived.", example: "task.updated" },
  "Event.timestamp": { description: "When it happened (UTC, ISO 8601): the time of the change's transaction.", example: T },
  "Event.data": {
    description: "The task after the change, in its API shape.",
    example: {
      id: "T-42",
      title: "Write the announcement",
      description: null,
      status: "IN_PROGRESS",
      priority: "HIGH",
      start_date: null,
      due_date: "2026-11-30T00:00:00.000Z",
      notes: null,
      story_points: 3,
      project_ids: [],
      parent_task_id: null,
      archived: false,
      recurrence: null,
      series_task_id: null,
      occurrence_date: null,
      created_at: T,
      updated_at: T,
    },
  },
  "WebhookDelivery.id": { description: "The delivery's id.", example: "whd_5pL8xQ2mT7vK4nD1bR9sW3" },
  "WebhookDelivery.state": { description: "Where the delivery stands.", example: "SUCCEEDED" },
  state: { description: "Where it stands.", example: "PENDING" },
  attempt_count: { description: "Attempts made so far.", example: 1 },
  last_status: { description: "The HTTP status of the last attempt; null when none answered.", example: 204 },
  next_attempt_at: { description: "When the next attempt is due; null when none is.", example: null },
  attempt: { description: "The attempt's number, from 1.", example: 1 },
  attempted_at: { description: "When the attempt was made.", example: T },
  outcome: { description: "How the call ended: delivered (a 2xx), request_failed, timeout, redirect_blocked, blocked or no_outcome.", example: "delivered" },
  "WebhookDeliveryAttempt.status": { description: "The HTTP status the endpoint answered; null when none.", example: 204 },
  "WebhookProbeResult.status": { description: "The HTTP status the endpoint answered; null when none.", example: 204 },
  "VerifyWebhookEndpointResponse.status": { description: "The HTTP status the endpoint answered; null when none.", example: 204 },
  error_class: { description: "What went wrong when the call failed (dns, connect, tls, timeout, …); null on success.", example: null },
  duration_ms: { description: "How long the call took, in milliseconds.", example: 42 },
  since: { description: "Replay the failed and disabled deliveries created at or after this time.", example: T },
  replayed_count: { description: "How many deliveries were queued again.", example: 12 },
  // -- problems ---------------------------------------------------------------------------------------------
  "Problem.title": { description: "A short, human summary of the code.", example: "Validation failed" },
  "Problem.status": { description: "The HTTP status, repeated.", example: 400 },
  code: { description: "The stable, machine-readable error code: branch on it.", example: "validation_failed" },
  "Problem.type": { description: "A URL of the code's entry on the errors page.", example: "https://api.example.com/docs/errors#validation_failed" },
  request_id: {
    description: "The request's id (5xx only; always in the x-request-id header): quote it to support.",
    example: "req_e903a3119ecb434ab66f13614829a34b",
  },
  errors: { description: "Field errors (validation only), each with an RFC 6901 pointer.", example: [{ pointer: "/name", message: "is required" }] },
  pointer: { description: "An RFC 6901 JSON pointer to the field: into the body, or /<name> for a query or path parameter.", example: "/name" },
  message: { description: "What is wrong with the field.", example: "is required" },
  detail: { description: "What went wrong with this request, for a person.", example: "The request body is invalid: /name is required" },
};

/** Query and path parameters, by name (`<operationId>.<name>` where one means something more). */
export const PARAMETER_DOCS: Record<string, Omit<FieldDoc, "example"> & { example?: unknown }> = {
  limit: { description: "Items per page, 1-100 (default 25).", example: 25 },
  // No example: a cursor is signed by the API, so any example would be refused (and reference UIs
  // prefill "Try it out" with examples).
  after: { description: "The `next_cursor` of the previous page; the other parameters must be the same as for that page." },
  organization_id: { description: "The organization's id (the credential's own).", example: "org_3kTMd92jf7Qw1xYp8LmN2a" },
  key_id: { description: "The API key's id.", example: "key_2bN8xQ4mT7pL1vD9kR3sW6" },
  "listTasks.status": { description: "Only tasks in this status.", example: "TODO" },
  project_id: { description: "The project's id.", example: "prj_5vN5Zu6nSVCjmB2jJBpwRY" },
  "listTasks.project_id": { description: "Only tasks in this project.", example: "prj_5vN5Zu6nSVCjmB2jJBpwRY" },
  "listTasks.parent_task_id": { description: "Only the subtasks of this task.", example: "T-7" },
  "listTasks.series_task_id": { description: "Only the occurrences made from this recurring task.", example: "T-12" },
  "listTasks.archived": { description: "Archived tasks instead of current ones (default false).", example: false },
  task_id: { description: "The task's id (T-<n>).", example: "T-42" },
  blocker_task_id: { description: "The blocking task's id (T-<n>).", example: "T-41" },
  attachment_id: { description: "The attachment's id.", example: "att_9pL2xQ7mT4vK1nD8bR5sW3" },
  date: { description: "The UTC day (YYYY-MM-DD).", example: "2026-11-23" },
  entry_id: { description: "The board entry's id.", example: "ent_4mT8xQ2pL6vK9nD1bR3sW7" },
  endpoint_id: { description: "The webhook endpoint's id.", example: "whe_8kQ3mT6pL2vX9nD4bR7sW1" },
  "listWebhookDeliveries.state": { description: "Only deliveries in this state.", example: "FAILED" },
  "listEvents.type": { description: "Only events of this type.", example: "task.updated" },
  "listEvents.task_id": { description: "Only the events of this task (404 when no task has this id).", example: "T-42" },
  "listEvents.created_gte": { description: "Only events that occurred at or after this time (ISO 8601).", example: "2026-11-01T00:00:00Z" },
  "listEvents.created_lt": { description: "Only events that occurred before this time (ISO 8601).", example: "2026-11-24T00:00:00Z" },
  "getEvent.event_id": { description: "The event's id: the `webhook-id` header of its deliveries.", example: "evt_2nK7xQ4mT9pL3vD6bR8sW5" },
  delivery_id: { description: "The delivery's id.", example: "whd_5pL8xQ2mT7vK4nD1bR9sW3" },
};

/** The documentation of a parameter of an operation. */
export function parameterDoc(operationId: string, name: string): (typeof PARAMETER_DOCS)[string] | undefined {
  return PARAMETER_DOCS[`${operationId}.${name}`] ?? PARAMETER_DOCS[name];
}

/** The documentation of a component's field: `<Component>.<field>` first, then the field's name. */
export function fieldDoc(component: string, field: string): FieldDoc | undefined {
  return FIELD_DOCS[`${component}.${field}`] ?? FIELD_DOCS[field];
}
