import type { Follower, FollowReason } from "@tasksvc/contracts";
import { KEYSET_TIME, keyset, keysetAfter, pageOf, type Sql } from "@tasksvc/db";

interface FollowerRow {
  user_id: string;
  reason: FollowReason;
  created_at: Date;
  cursor_at: string;
}

const FOLLOWER_PAGES = keyset("asc", ["created_at", "timestamp"], ["user_id", "text"]);
const toFollower = (r: FollowerRow): Follower => ({ user_id: r.user_id, reason: r.reason, created_at: r.created_at.toISOString() });

/** Rows of users who left a task stay (unfollowed_at), so no automatic follow brings them back. */
export function followersRepo(sql: Sql) {
  const keysetTime = sql.unsafe(KEYSET_TIME);
  return {
    /** Oldest first. A follower is a user id and a word or two, so a page of 100 stays far under any message limit. */
    async list(org: string, number: number, limit: number, after: string | undefined) {
      const rows = await sql<FollowerRow[]>`
        select user_id, reason, created_at, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at from task_followers
        where organization_id = ${org} and task_number = ${number} and unfollowed_at is null
          ${keysetAfter(sql, after, FOLLOWER_PAGES)}
        order by created_at, user_id
        limit ${limit + 1}`;
      return pageOf(rows, limit, toFollower, (r) => [r.cursor_at, r.user_id]);
    },

    /** A follower stays as they are (their first reason); one who had left comes back, by hand. */
    async follow(org: string, number: number, user: string): Promise<Follower> {
      const [row] = await sql<FollowerRow[]>`
        insert into task_followers as f (organization_id, task_number, user_id, reason)
        values (${org}, ${number}, ${user}, 'manual')
        on conflict (organization_id, task_number, user_id) do update set
          reason = case when f.unfollowed_at is null then f.reason else 'manual' end,
          created_at = case when f.unfollowed_at is null then f.created_at else now() end,
          unfollowed_at = null
        returning user_id, reason, created_at, '' as cursor_at`;
      if (!row) throw new Error("follow returned no row");
      return toFollower(row);
    },

    /**
     * Automatic follows (a commenter, the users a comment mentions): a user who follows stays as they
     * are, and one who unfollowed is not brought back (their row stays, with unfollowed_at).
     */
    async followAutomatically(org: string, number: number, follows: ReadonlyArray<{ user: string; reason: FollowReason }>): Promise<void> {
      if (follows.length === 0) return;
      await sql`
        insert into task_followers (organization_id, task_number, user_id, reason)
        select ${org}, ${number}, f.user_id, f.reason
        from unnest(${follows.map((f) => f.user)}::text[], ${follows.map((f) => f.reason)}::text[]) with ordinality as f(user_id, reason, ord)
        order by f.ord
        on conflict (organization_id, task_number, user_id) do nothing`;
    },

    /** Also for a user who never followed: they have said they do not want to, so no automatic follow adds them. */
    async unfollow(org: string, number: number, user: string): Promise<void> {
      await sql`
        insert into task_followers as f (organization_id, task_number, user_id, reason, unfollowed_at)
        values (${org}, ${number}, ${user}, 'manual', now())
        on conflict (organization_id, task_number, user_id) do update set unfollowed_at = coalesce(f.unfollowed_at, now())`;
    },
  };
}
export type FollowersRepo = ReturnType<typeof followersRepo>;
