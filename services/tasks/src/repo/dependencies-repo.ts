import type { DependencyView, TaskStatus } from "@tasksvc/contracts";
import { taskId } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";

export function dependenciesRepo(sql: Sql) {
  return {
    /** The acyclicity check reads the graph, so its writes are serialized; held to the commit. */
    async lock(org: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.dependencies:${org}`}, 0))`;
    },

    async isBlockedBy(org: string, from: number, target: number): Promise<boolean> {
      const rows = await sql`
        with recursive chain(n) as (
          select ${from}::bigint
          union
          select d.blocker_number from dependencies d join chain on d.organization_id = ${org} and d.blocked_number = chain.n
        )
        select 1 from chain where n = ${target} limit 1`;
      return rows.length === 1;
    },

    async insert(org: string, blocked: number, blocker: number): Promise<boolean> {
      const rows = await sql`
        insert into dependencies (organization_id, blocked_number, blocker_number) values (${org}, ${blocked}, ${blocker})
        on conflict do nothing returning 1`;
      return rows.length === 1;
    },

    async remove(org: string, blocked: number, blocker: number): Promise<boolean> {
      const rows = await sql`
        delete from dependencies where organization_id = ${org} and blocked_number = ${blocked} and blocker_number = ${blocker} returning 1`;
      return rows.length === 1;
    },

    async view(org: string, number: number): Promise<DependencyView> {
      const rows = await sql<{ side: "blocked_by" | "blocking"; number: string; title: string; status: TaskStatus }[]>`
        select 'blocked_by' as side, t.number, t.title, t.status, d.created_at
        from dependencies d join tasks t on t.organization_id = d.organization_id and t.number = d.blocker_number and t.deleted_at is null
        where d.organization_id = ${org} and d.blocked_number = ${number}
        union all
        select 'blocking', t.number, t.title, t.status, d.created_at
        from dependencies d join tasks t on t.organization_id = d.organization_id and t.number = d.blocked_number and t.deleted_at is null
        where d.organization_id = ${org} and d.blocker_number = ${number}
        order by created_at, number`;
      const item = (r: (typeof rows)[number]) => ({ task_id: taskId(r.number), title: r.title, status: r.status, open: r.status !== "COMPLETED" });
      const blockedBy = rows.filter((r) => r.side === "blocked_by").map(item);
      const blocking = rows.filter((r) => r.side === "blocking").map(item);
      return {
        task_id: taskId(number),
        is_blocked: blockedBy.some((b) => b.open),
        blocked_by_count: blockedBy.length,
        blocking_count: blocking.length,
        blocked_by: blockedBy,
        blocking,
      };
    },
  };
}
export type DependenciesRepo = ReturnType<typeof dependenciesRepo>;
