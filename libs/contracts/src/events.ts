import { z } from "zod";
import { EXAMPLE_INSTANT, Timestamp } from "./common.js";
import { Comment, COMMENT_EXAMPLE, DeletedCommentData } from "./comments.js";
import {
  CommentEventType,
  EndpointEventType,
  EventActorId,
  EventType,
  isCommentEventType,
  isEndpointEventType,
  isPurgeEventType,
  PurgeEventType,
} from "./event-types.js";
import { ErasedTask, TaskEvent, TaskFeedEvent, TEST_EVENT } from "./tasks.js";
import { WebhookEndpoint } from "./webhooks.js";

// Task events, comment events and the webhook endpoints' operational events travel as one envelope.

/** Written by the tasks service in the comment's transaction; data is the comment (only `{ id, task_id }` once deleted). */
export const CommentEvent = z.object({
  id: z.string().min(1),
  type: CommentEventType,
  organization_id: z.string().min(1),
  actor_id: EventActorId,
  created_at: Timestamp,
  data: z.union([Comment, DeletedCommentData]),
});
export type CommentEvent = z.infer<typeof CommentEvent>;

/** Taken into the tasks service's events outbox; data is the endpoint after the change. */
export const EndpointEvent = z.object({
  id: z.string().min(1),
  type: EndpointEventType,
  organization_id: z.string().min(1),
  created_at: Timestamp,
  data: WebhookEndpoint,
});
export type EndpointEvent = z.infer<typeof EndpointEvent>;

/** Written by the tasks service in the transaction that erases the task's last row. */
export const PurgeEvent = z.object({
  id: z.string().min(1),
  type: PurgeEventType,
  organization_id: z.string().min(1),
  actor_id: EventActorId,
  created_at: Timestamp,
  data: ErasedTask,
});
export type PurgeEvent = z.infer<typeof PurgeEvent>;

export const OrgEvent = z.union([TaskEvent, CommentEvent, EndpointEvent, PurgeEvent]);
export type OrgEvent = z.infer<typeof OrgEvent>;

export const isEndpointEvent = (e: OrgEvent): e is EndpointEvent => isEndpointEventType(e.type);
export const isCommentEvent = (e: OrgEvent): e is CommentEvent => isCommentEventType(e.type);
export const isPurgeEvent = (e: OrgEvent): e is PurgeEvent => isPurgeEventType(e.type);

const ENDPOINT_EXAMPLE: WebhookEndpoint = {
  id: "whe_8kQ3mT6pL2vX9nD4bR7sW1",
  url: "https://hooks.example.com/tasksvc",
  enabled: false,
  event_types: ["task.created", "task.updated"],
  verified: true,
  disabled_reason: "consecutive_failures",
  failure_count: 100,
  last_success_at: "2026-11-19T09:30:00.000Z",
  last_failure_at: EXAMPLE_INSTANT,
  rate_limit: null,
  created_at: "2026-11-01T09:30:00.000Z",
  updated_at: EXAMPLE_INSTANT,
};

export const EndpointFeedEvent = z
  .object({
    id: z.string().meta({ description: "The event's id: the `webhook-id` header of every delivery of it.", examples: ["evt_7mQ2xK9pT4vL8nD3bR6sW1"] }),
    type: EndpointEventType.meta({
      description: "What happened: webhook_endpoint.disabled (automatically or by hand) or webhook_endpoint.enabled.",
      examples: ["webhook_endpoint.disabled"],
    }),
    timestamp: Timestamp.meta({ description: "When it happened (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] }),
    data: WebhookEndpoint.meta({
      description: "The endpoint after the change, as reads show it: `disabled_reason` says why an automatic disable happened (null for one by hand).",
      examples: [ENDPOINT_EXAMPLE],
    }),
    test: TEST_EVENT,
  })
  .meta({ description: "A webhook endpoint was disabled or enabled. Needs the scope webhooks:read to be seen in the feed and the stream." });
export type EndpointFeedEvent = z.infer<typeof EndpointFeedEvent>;

export const CommentFeedEvent = z
  .object({
    id: z.string().meta({ description: "The event's id: the `webhook-id` header of every delivery of it.", examples: ["evt_5pL2xK8mT3vQ9nD4bR7sW1"] }),
    type: CommentEventType.meta({
      description: "What happened: comment.created, comment.updated (its body was edited) or comment.deleted.",
      examples: ["comment.created"],
    }),
    timestamp: Timestamp.meta({ description: "When it happened (UTC, ISO 8601): the time of the change's transaction.", examples: [EXAMPLE_INSTANT] }),
    data: z.union([Comment, DeletedCommentData]).meta({
      description: "The comment after the change, in its API shape; on comment.deleted only `{ id, task_id }`.",
      examples: [COMMENT_EXAMPLE],
    }),
    test: TEST_EVENT,
  })
  .meta({
    description:
      "A comment on a task was written, edited or deleted. Delivered to a webhook endpoint only when its event_types name the type (an empty list means every task.* type).",
  });
export type CommentFeedEvent = z.infer<typeof CommentFeedEvent>;

export const PurgeFeedEvent = z
  .object({
    id: z.string().meta({ description: "The event's id: the `webhook-id` header of every delivery of it.", examples: ["evt_3nQ7xK2mT8vL4pD9bR5sW1"] }),
    type: PurgeEventType.meta({ description: "What happened: task.purged, the task was erased for good.", examples: ["task.purged"] }),
    timestamp: Timestamp.meta({ description: "When it was erased (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] }),
    data: ErasedTask.meta({ description: "Only the erased task's id.", examples: [{ id: "T-42" }] }),
    test: TEST_EVENT,
  })
  .meta({
    description:
      "A task left the trash for good: its versions, comments, attachments, links, followers, board entries and notifications are gone, and its earlier events keep only `{ id }`. Delivered to a webhook endpoint only when its event_types name the type (an empty list means every other task.* type).",
  });
export type PurgeFeedEvent = z.infer<typeof PurgeFeedEvent>;

/** The feed's item, the stream's message and the webhook body (without the id): told apart by `type`. */
export const Event = z.union([TaskFeedEvent, PurgeFeedEvent, CommentFeedEvent, EndpointFeedEvent]);
export type Event = z.infer<typeof Event>;

/** The endpoints' events need webhooks:read. */
export function visibleEventTypes(scopes: readonly string[]): EventType[] {
  return scopes.includes("webhooks:read") ? [...EventType.options] : EventType.options.filter((t) => !isEndpointEventType(t));
}
