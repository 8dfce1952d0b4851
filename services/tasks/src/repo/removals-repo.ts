import type { Sql } from "@tasksvc/db";

export type RemovalKind = "label" | "field" | "option";

/** What the label checks and the removal work read; label rows themselves are the labels repository's. */
export function removalsRepo(sql: Sql) {
  return {
    /**
     * Those of `ids` that are labels of the organization now, locked (key share) to the commit:
     * a label deleted meanwhile waits for this transaction, so its removal then sees the task.
     */
    async lockLabels(org: string, ids: readonly string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await sql<{ id: string }[]>`
        select id from labels where organization_id = ${org} and id = any(${ids as string[]}::text[]) for key share`;
      return new Set(rows.map((r) => r.id));
    },

    /** `fieldKey`: the key of the custom field a removed field or option belongs to. */
    async record(org: string, kind: RemovalKind, ref: string, fieldKey: string | null = null): Promise<void> {
      await sql`
        insert into removals (organization_id, kind, ref, field_key) values (${org}, ${kind}, ${ref}, ${fieldKey})
        on conflict do nothing`;
    },

    /** The custom field key a field's or option's removal is about; null for a label or a removal done. */
    async fieldKey(org: string, kind: RemovalKind, ref: string): Promise<string | null | undefined> {
      const [row] = await sql<{ field_key: string | null }[]>`
        select field_key from removals where organization_id = ${org} and kind = ${kind} and ref = ${ref}`;
      return row === undefined ? undefined : row.field_key;
    },

    async pending(limit: number): Promise<Array<{ organization_id: string; kind: RemovalKind; ref: string }>> {
      return sql`select organization_id, kind, ref from removals order by created_at limit ${limit}`;
    },

    async finish(org: string, kind: RemovalKind, ref: string): Promise<void> {
      await sql`delete from removals where organization_id = ${org} and kind = ${kind} and ref = ${ref}`;
    },
  };
}
export type RemovalsRepo = ReturnType<typeof removalsRepo>;
