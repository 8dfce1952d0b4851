import type { Caller, ListNotificationsQuery, MarkedRead, Notification, Page, ReadAllBody, UnreadCount } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { NotificationsResources } from "./resources.js";

/** Rows marked per statement by read-all: each batch is its own short statement, so a user with 100,000 unread holds no lock long. */
export const READ_ALL_BATCH = 5_000;

/** The caller's own notifications in the caller's organization; anyone else's answer like unknown ones. */
export function inboxSystem(res: NotificationsResources) {
  const { repo } = res;
  return {
    list(c: Caller, q: ListNotificationsQuery): Promise<Page<Notification>> {
      return repo.list(c.organizationId, c.userId, q.unread, q.limit, q.after);
    },

    async unreadCount(c: Caller): Promise<UnreadCount> {
      return { count: await repo.unreadCount(c.organizationId, c.userId) };
    },

    async read(c: Caller, id: string): Promise<Notification> {
      const n = await repo.markRead(c.organizationId, c.userId, id);
      if (!n) throw new AppError("resource_not_found", "No notification with that id exists in your inbox.");
      return n;
    },

    /** Newest first, batch after batch, until one comes back short; a notification arriving meanwhile may or may not be marked. */
    async readAll(c: Caller, body: ReadAllBody): Promise<MarkedRead> {
      const before = body.before === undefined ? undefined : new Date(body.before).toISOString();
      let marked = 0;
      for (;;) {
        const n = await repo.markReadBatch(c.organizationId, c.userId, before, READ_ALL_BATCH);
        marked += n;
        if (n < READ_ALL_BATCH) return { marked_count: marked };
      }
    },
  };
}
export type InboxSystem = ReturnType<typeof inboxSystem>;
