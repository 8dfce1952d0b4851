import { z } from "zod";

// The types of every event the outbox carries, apart from the schemas of what they carry.

/**
 * task.due_soon and task.overdue come from the tasks service's due-date scheduler, not from a write;
 * task.deleted and task.restored carry the task as it went to the trash and as it came back.
 */
export const TaskEventType = z.enum(["task.created", "task.updated", "task.archived", "task.due_soon", "task.overdue", "task.deleted", "task.restored"]);
export type TaskEventType = z.infer<typeof TaskEventType>;
/** Written by the webhooks service, carried by the same outbox, stream, feed and deliveries as task events. */
export const EndpointEventType = z.enum(["webhook_endpoint.disabled", "webhook_endpoint.enabled"]);
export type EndpointEventType = z.infer<typeof EndpointEventType>;
/** Written by the tasks service with the comment's change; not `task.*`, so an endpoint gets them only by naming them. */
export const CommentEventType = z.enum(["comment.created", "comment.updated", "comment.deleted"]);
export type CommentEventType = z.infer<typeof CommentEventType>;
/** A task erased for good: its data is only `{ id }`, so, like comment.*, an endpoint gets it only by naming it. */
export const PurgeEventType = z.enum(["task.purged"]);
export type PurgeEventType = z.infer<typeof PurgeEventType>;
export const EventType = z.enum([...TaskEventType.options, ...PurgeEventType.options, ...CommentEventType.options, ...EndpointEventType.options]);
export type EventType = z.infer<typeof EventType>;
export const isTaskEventType = (t: string): t is TaskEventType => (TaskEventType.options as readonly string[]).includes(t);
export const isCommentEventType = (t: string): t is CommentEventType => (CommentEventType.options as readonly string[]).includes(t);
export const isPurgeEventType = (t: string): t is PurgeEventType => (PurgeEventType.options as readonly string[]).includes(t);
/** The types an endpoint with an empty event_types list gets: every task.* type whose data is a task. */
export const DEFAULT_ENDPOINT_EVENT_TYPES: readonly TaskEventType[] = TaskEventType.options;
export const isEndpointEventType = (t: string): t is EndpointEventType => (EndpointEventType.options as readonly string[]).includes(t);

/**
 * The user whose credential made the change; null when the service did it on its own (a recurrence,
 * a removal job). Internal to the message, beside `organization_id`: never in the feed item, the
 * stream message or the webhook body. Absent on messages written before it was added.
 */
export const EventActorId = z.string().nullable().optional();
