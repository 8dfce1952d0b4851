import { ListNotificationsQuery, MarkedRead, Notification, NotificationParams, ReadAllBody, UnreadCount, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// The credential's user's own inbox: reading and marking it read needs only tasks:read, as it changes no task.
export const notifications = resource({ name: "notifications", scope: "tasks:read" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/notifications",
      operationId: "listNotifications",
      summary: "Your notifications in this organization, newest first (`unread=true`: only unread ones)",
      query: ListNotificationsQuery,
      response: page(Notification),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.notifications.relay("listNotifications", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/notifications/unread-count",
      operationId: "countUnreadNotifications",
      summary: "How many of your notifications are unread",
      response: UnreadCount,
    },
    ({ clients, ctx }) => clients.notifications.relay("unreadCount", {}, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/notifications/read-all",
      operationId: "readAllNotifications",
      summary: "Mark every unread notification read, or those created before `before`",
      // Without a body: every unread one.
      body: ReadAllBody.optional(),
      response: MarkedRead,
    },
    ({ clients, body, ctx }) => clients.notifications.relay("readAllNotifications", body ?? {}, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/notifications/:notification_id/read",
      operationId: "readNotification",
      summary: "Mark a notification read (reading it again keeps the first read time)",
      params: NotificationParams,
      response: Notification,
    },
    ({ clients, params, ctx }) => clients.notifications.relay("readNotification", params, ctx),
  );
});
