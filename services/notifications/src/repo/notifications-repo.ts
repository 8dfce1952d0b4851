import type { Notification, NotificationType } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, KEYSET_TIME, keyset, keysetAfter, newId, pageOf, type Sql, withinBudget } from "@tasksvc/db";

interface NotificationRow {
  id: string;
  type: NotificationType;
  task_id: string;
  comment_id: string | null;
  actor_id: string | null;
  event_id: string;
  created_at: Date;
  read_at: Date | null;
  cursor_at: string;
}

const toNotification = (r: NotificationRow): Notification => ({
  id: r.id,
  type: r.type,
  task_id: r.task_id,
  comment_id: r.comment_id,
  actor_id: r.actor_id,
  event_id: r.event_id,
  created_at: r.created_at.toISOString(),
  read_at: r.read_at === null ? null : r.read_at.toISOString(),
});

const COLUMNS = "id, type, task_id, comment_id, actor_id, event_id, created_at, read_at";
const INBOX_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

export interface EventNotifications {
  organizationId: string;
  eventId: string;
  createdAt: string;
  taskId: string;
  commentId: string | null;
  actorId: string | null;
  notify: Array<{ type: NotificationType; userId: string }>;
  /** Told of the mention only if no earlier event of the comment told them. */
  mentions: string[];
}

export function notificationsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const keysetTime = sql.unsafe(KEYSET_TIME);
  const columns = sql.unsafe(COLUMNS);
  return {
    /**
     * One statement per event, so a crash leaves all of it or none: the mentions recorded, the
     * notifications that are new (a redelivery conflicts on (event, user, type) and adds nothing),
     * and the unread counters of exactly the rows inserted, locked in user order. Answers how many
     * were new.
     */
    async insertEvent(e: EventNotifications): Promise<number> {
      const plain = e.notify;
      const ids = [...plain.map(() => newId("ntf")), ...e.mentions.map(() => newId("ntf"))];
      const users = [...plain.map((n) => n.userId), ...e.mentions];
      const types = [...plain.map((n) => n.type), ...e.mentions.map(() => "mentioned")];
      if (ids.length === 0) return 0;
      const [row] = await sql<{ n: number }[]>`
        with first_mentions as (
          insert into comment_mentions (organization_id, comment_id, user_id)
          select ${e.organizationId}, ${e.commentId}, u from unnest(${e.mentions}::text[]) u
          where ${e.commentId}::text is not null
          on conflict do nothing
          returning user_id
        ), wanted as (
          select * from unnest(${ids}::text[], ${users}::text[], ${types}::text[]) as w(id, user_id, type)
          where (w.type <> 'mentioned' or w.user_id in (select user_id from first_mentions))
            and not exists (select 1 from erased_tasks x where x.organization_id = ${e.organizationId} and x.task_id = ${e.taskId})
        ), inserted as (
          insert into notifications (id, organization_id, user_id, type, task_id, comment_id, actor_id, event_id, created_at)
          select id, ${e.organizationId}, user_id, type, ${e.taskId}, ${e.commentId}, ${e.actorId}, ${e.eventId}, ${e.createdAt}::timestamptz from wanted
          on conflict (event_id, user_id, type) do nothing
          returning user_id
        ), counted as (
          insert into unread_counts (organization_id, user_id, unread)
          select ${e.organizationId}, user_id, count(*) from inserted group by user_id order by user_id
          on conflict (organization_id, user_id) do update set unread = unread_counts.unread + excluded.unread
        )
        select count(*)::int as n from inserted`;
      return row?.n ?? 0;
    },

    /** Newest first. An item is ids and times of bounded length, yet the page is cut at the byte budget like every list. */
    async list(org: string, user: string, unread: boolean, limit: number, after: string | undefined) {
      const page = sql`
        select ${columns}, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at,
          octet_length(id) + octet_length(task_id) + coalesce(octet_length(comment_id), 0) + coalesce(octet_length(actor_id), 0) + octet_length(event_id) + 200 as bytes
        from notifications
        where organization_id = ${org} and user_id = ${user} ${unread ? sql`and read_at is null` : sql``}
          ${keysetAfter(sql, after, INBOX_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      const rows = await sql<(NotificationRow & Budgeted)[]>`${withinBudget(sql, page, "item.bytes", "item.created_at desc, item.id desc", pageBytes)}`;
      return pageOf(rows, limit, toNotification, (r) => [r.cursor_at, r.id]);
    },

    async unreadCount(org: string, user: string): Promise<number> {
      const [row] = await sql<{ unread: string }[]>`select unread::text as unread from unread_counts where organization_id = ${org} and user_id = ${user}`;
      return row === undefined ? 0 : Number(row.unread);
    },

    /** The first read sets read_at and takes one from the counter, in one statement; a second changes nothing. */
    async markRead(org: string, user: string, id: string): Promise<Notification | undefined> {
      const [marked] = await sql<NotificationRow[]>`
        with marked as (
          update notifications set read_at = now()
          where organization_id = ${org} and user_id = ${user} and id = ${id} and read_at is null
          returning ${columns}
        ), counted as (
          update unread_counts set unread = greatest(unread - 1, 0)
          where organization_id = ${org} and user_id = ${user} and exists (select 1 from marked)
        )
        select *, '' as cursor_at from marked`;
      if (marked) return toNotification(marked);
      const [row] = await sql<NotificationRow[]>`
        select ${columns}, '' as cursor_at from notifications where organization_id = ${org} and user_id = ${user} and id = ${id}`;
      return row && toNotification(row);
    },

    /** At most `batch` of the newest unread ones (before `before`, exclusive), with the counter; answers how many. */
    async markReadBatch(org: string, user: string, before: string | undefined, batch: number): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        with marked as (
          update notifications set read_at = now()
          where id in (
            select id from notifications
            where organization_id = ${org} and user_id = ${user} and read_at is null
              ${before === undefined ? sql`` : sql`and created_at < ${before}::timestamptz`}
            order by created_at desc, id desc
            limit ${batch}
          ) and read_at is null
          returning 1
        ), counted as (
          update unread_counts set unread = greatest(unread - (select count(*) from marked), 0)
          where organization_id = ${org} and user_id = ${user} and exists (select 1 from marked)
        )
        select count(*)::int as n from marked`;
      return row?.n ?? 0;
    },

    /**
     * Notifications older than the retention, oldest first, `batch` at a time; rows another replica
     * is deleting are skipped, so replicas sweeping at once share the work. Unread ones leave the counter.
     */
    async sweepBatch(days: number, batch: number): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        with gone as (
          delete from notifications where id in (
            select id from notifications where created_at < now() - make_interval(days => ${days})
            order by created_at limit ${batch}
            for update skip locked
          )
          returning organization_id, user_id, read_at
        ), counted as (
          update unread_counts c set unread = greatest(c.unread - g.n, 0)
          from (select organization_id, user_id, count(*) as n from gone where read_at is null group by 1, 2) g
          where c.organization_id = g.organization_id and c.user_id = g.user_id
        )
        select count(*)::int as n from gone`;
      return row?.n ?? 0;
    },

    /**
     * Up to `batch` notifications of an erased task, with the unread counters of their users and the
     * mention records of their comments; answers how many went.
     */
    /** Recorded before the task's notifications go, so no later event of it makes one again. */
    async markErased(org: string, taskId: string): Promise<void> {
      await sql`insert into erased_tasks (organization_id, task_id) values (${org}, ${taskId}) on conflict do nothing`;
    },

    /** Tasks erased within `seconds`: an event taken in the same moment as the erasure may have left a notification. */
    async recentlyErased(seconds: number, limit: number): Promise<Array<{ organization_id: string; task_id: string }>> {
      return sql<{ organization_id: string; task_id: string }[]>`
        select organization_id, task_id from erased_tasks where erased_at > now() - make_interval(secs => ${seconds})
        order by erased_at limit ${limit}`;
    },

    /** Records past the stream's age: no event of theirs can come any more. */
    async sweepErased(days: number, batch: number): Promise<number> {
      const rows = await sql`
        delete from erased_tasks where (organization_id, task_id) in (
          select organization_id, task_id from erased_tasks where erased_at < now() - make_interval(days => ${days})
          limit ${batch} for update skip locked)
        returning 1`;
      return rows.length;
    },

    async forgetTaskBatch(org: string, taskId: string, batch: number): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        with gone as (
          delete from notifications where id in (
            select id from notifications where organization_id = ${org} and task_id = ${taskId}
            limit ${batch}
            for update skip locked
          )
          returning organization_id, user_id, read_at, comment_id
        ), counted as (
          update unread_counts c set unread = greatest(c.unread - g.n, 0)
          from (select organization_id, user_id, count(*) as n from gone where read_at is null group by 1, 2) g
          where c.organization_id = g.organization_id and c.user_id = g.user_id
        ), mentions as (
          delete from comment_mentions where organization_id = ${org} and comment_id in (select comment_id from gone where comment_id is not null)
        )
        select count(*)::int as n from gone`;
      return row?.n ?? 0;
    },

    /** A comment's mention records go with the same retention: an edit that late tells a mentioned user again. */
    async sweepMentions(days: number, batch: number): Promise<number> {
      const rows = await sql`
        delete from comment_mentions where (organization_id, comment_id, user_id) in (
          select organization_id, comment_id, user_id from comment_mentions where created_at < now() - make_interval(days => ${days})
          limit ${batch} for update skip locked
        )
        returning 1`;
      return rows.length;
    },
  };
}
export type NotificationsRepo = ReturnType<typeof notificationsRepo>;
