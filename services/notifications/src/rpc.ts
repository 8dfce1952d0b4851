import { callerOf, type notificationsRpc } from "@tasksvc/contracts";
import type { Handlers } from "@tasksvc/nats";
import type { InboxSystem } from "./domain/inbox.js";

export function notificationsHandlers(inbox: InboxSystem): Handlers<typeof notificationsRpc> {
  return {
    listNotifications: (i, ctx) => inbox.list(callerOf(ctx), i),
    unreadCount: (_i, ctx) => inbox.unreadCount(callerOf(ctx)),
    readNotification: (i, ctx) => inbox.read(callerOf(ctx), i.notification_id),
    readAllNotifications: (i, ctx) => inbox.readAll(callerOf(ctx), i),
  };
}
