import { z } from "zod";
import { inKeyOrder, OpaqueId } from "./common.js";
import { listOf } from "./task-search.js";
import { Event } from "./events.js";
import { COMMENT_FIELDS } from "./comments.js";
import { EventType, isCommentEventType, isTaskEventType } from "./event-types.js";
import { inTaskOrder } from "./tasks.js";
import { WebhookEndpoint } from "./webhooks.js";

/** Across every gateway replica. */
export const MAX_STREAMS_PER_CREDENTIAL = 5;
/** Whatever its number of credentials. */
export const MAX_STREAMS_PER_ORGANIZATION = 25;
/** Keeps proxies and load balancers from closing an idle stream. */
export const STREAM_HEARTBEAT_MS = 15_000;

const EVENT_ID = "evt_2nK7xQ4mT9pL3vD6bR8sW5";

/** The Last-Event-ID header wins over `after`: it is what a reconnecting EventSource sends. */
export const StreamEventsQuery = z
  .object({
    type: listOf(EventType.options)
      .optional()
      .meta({
        description:
          "Only events of these types, comma-separated (`task.created,task.updated`). The webhook_endpoint.* types need the scope webhooks:read; without it they are left out.",
        examples: ["task.updated"],
      }),
    // No example: an id of another organization, or older than 30 days, is refused.
    after: OpaqueId.optional().meta({
      description:
        "Resume after this event (its id, the `id:` of a message or a webhook-id): first every later event of the last 30 days, then live ones. The `Last-Event-ID` header does the same and wins over it.",
    }),
  })
  .strict();
export type StreamEventsQuery = z.output<typeof StreamEventsQuery>;

/** Events published before sequences were recorded have none: placed by `at`/`id` (the feed's order), they come first. */
export const StreamPosition = z.union([z.object({ seq: z.number().int().nonnegative() }).strict(), z.object({ at: z.string(), id: z.string() }).strict()]);
export type StreamPosition = z.infer<typeof StreamPosition>;

export const ReplayEventsInput = z.object({
  from: z.union([z.object({ event_id: OpaqueId }).strict(), z.object({ position: StreamPosition }).strict()]),
  types: z.array(EventType).optional(),
  limit: z.number().int().min(1).max(1000),
});
export type ReplayEventsInput = z.infer<typeof ReplayEventsInput>;

export const ReplayEventsOutput = z.object({
  items: z.array(z.object({ seq: z.number().int().nonnegative(), event: Event })),
  next: StreamPosition,
  /** This page was full, or the older order is done and the recorded one starts. */
  more: z.boolean(),
  /** Every event published up to this sequence has its sequence recorded: one the replay has not sent comes live. */
  through: z.number().int().nonnegative(),
  /** Written but not yet published: ask again shortly. */
  pending: z.boolean(),
  unknown: z.boolean(),
});
export type ReplayEventsOutput = z.infer<typeof ReplayEventsOutput>;

const ENDPOINT_FIELD_ORDER: readonly string[] = Object.keys(WebhookEndpoint.shape);

/** jsonb sorts keys by length. */
export function inDataOrder<T>(type: string, data: T): T {
  if (typeof data !== "object" || data === null) return data;
  if (isTaskEventType(type)) return inTaskOrder(data);
  return inKeyOrder(data, isCommentEventType(type) ? COMMENT_FIELDS : ENDPOINT_FIELD_ORDER);
}

export function sseMessage(id: string, type: string, json: string): string {
  return `id: ${id}\nevent: ${type}\ndata: ${json}\n\n`;
}

export const STREAM_EXAMPLE = sseMessage(
  EVENT_ID,
  "task.updated",
  '{"id":"evt_2nK7xQ4mT9pL3vD6bR8sW5","type":"task.updated","timestamp":"2026-11-24T09:30:00.000Z","data":{"id":"T-42","version":3,"title":"Write the announcement","status":"IN_PROGRESS"},"changes":{"status":{"from":"TODO","to":"IN_PROGRESS"}}}',
);
