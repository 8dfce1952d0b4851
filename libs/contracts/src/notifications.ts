import { z } from "zod";
import { CreatedAt, EXAMPLE_INSTANT, OpaqueId, PageQuery, page, Timestamp } from "./common.js";
import type { RpcCatalog } from "./rpc.js";

// The inbox of the notifications service: what a user hears about the tasks they care about.

export const NOTIFICATION_TYPES = ["assigned", "mentioned", "commented", "due_soon", "overdue"] as const;
export const NotificationType = z.enum(NOTIFICATION_TYPES);
export type NotificationType = z.infer<typeof NotificationType>;

/** Kept this long after their event; older ones are swept. */
export const NOTIFICATION_RETENTION_DAYS = 90;

const NOTIFICATION_ID = "ntf_6pK3xQ8mT2vL9nD4bR7sW1";
const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";

export const Notification = z.object({
  id: z.string().meta({ description: "The notification's id.", examples: [NOTIFICATION_ID] }),
  type: NotificationType.meta({
    description:
      "Why it came: `assigned` (you were assigned the task), `mentioned` (a comment names you), `commented` (a comment on a task you follow), `due_soon` or `overdue` (a task you are assigned, or own without assignees, is due soon or past due).",
    examples: ["assigned"],
  }),
  task_id: z.string().meta({ description: "The task it is about (T-<n>).", examples: ["T-42"] }),
  comment_id: z
    .string()
    .nullable()
    .meta({ description: "The comment it is about, for `mentioned` and `commented`; null otherwise.", examples: [null] }),
  actor_id: z
    .string()
    .nullable()
    .meta({ description: "The user whose change caused it; null when the system did (due dates) or the event did not say.", examples: [USER_ID] }),
  event_id: z
    .string()
    .meta({ description: "The event it comes from, as in the events feed (`GET /v1/events/{event_id}`).", examples: ["evt_2nK7xQ4mT9pL3vD6bR8sW5"] }),
  created_at: CreatedAt.meta({ description: "When its event happened (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] }),
  read_at: Timestamp.nullable().meta({ description: "When it was first marked read; null while unread.", examples: [null] }),
});
export type Notification = z.infer<typeof Notification>;

const UnreadOnly = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")], { message: "must be true or false" });

export const ListNotificationsQuery = PageQuery.extend({
  unread: UnreadOnly.default(false).meta({ description: "`true`: only unread notifications (default false: all of them).", examples: [true] }),
}).strict();
export type ListNotificationsQuery = z.infer<typeof ListNotificationsQuery>;

export const NotificationParams = z.object({
  notification_id: OpaqueId.meta({ description: "The notification's id.", examples: [NOTIFICATION_ID] }),
});

export const UnreadCount = z.object({
  count: z
    .number()
    .int()
    .min(0)
    .meta({ description: "How many of your notifications in this organization are unread.", examples: [3] }),
});
export type UnreadCount = z.infer<typeof UnreadCount>;

export const ReadAllBody = z.strictObject({
  before: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({
      description:
        "Only notifications created before this time (exclusive; ISO 8601): pass the `created_at` of the newest one you have shown. All unread ones when omitted.",
      examples: [EXAMPLE_INSTANT],
    }),
});
export type ReadAllBody = z.infer<typeof ReadAllBody>;

export const MarkedRead = z.object({
  marked_count: z
    .number()
    .int()
    .min(0)
    .meta({ description: "How many unread notifications this marked read (already read ones are not counted).", examples: [12] }),
});
export type MarkedRead = z.infer<typeof MarkedRead>;

export const notificationsRpc = {
  service: "notifications",
  ops: {
    listNotifications: { input: ListNotificationsQuery, output: page(Notification) },
    unreadCount: { input: z.object({}), output: UnreadCount },
    readNotification: { input: NotificationParams, output: Notification },
    // Marks in batches of bounded size, one transaction each, so it may take longer than a read.
    readAllNotifications: { input: ReadAllBody, output: MarkedRead, timeoutMs: 30_000 },
  },
} as const satisfies RpcCatalog;

/**
 * A message of the task events stream as the notifications service reads it: only the envelope,
 * tolerantly (unknown types and fields pass), since producers add types and fields on their own
 * schedule; each type's data is read by the service's recipient rules.
 */
export const NotifiableEvent = z.looseObject({
  id: z.string().min(1).max(100),
  type: z.string().min(1).max(100),
  organization_id: z.string().min(1).max(100),
  created_at: Timestamp,
  actor_id: z.string().max(100).nullable().optional(),
  data: z.unknown(),
  changes: z.unknown().optional(),
});
export type NotifiableEvent = z.infer<typeof NotifiableEvent>;
