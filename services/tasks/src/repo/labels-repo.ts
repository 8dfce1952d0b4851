import type { TaskLabel } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, decodeKeyset, mapPgError, newId, pageOf, PG, type PgErrorRule, type Sql, withinBudget } from "@tasksvc/db";
import { iso } from "./task-json.js";

interface LabelRow {
  id: string;
  name: string;
  color: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}
const toLabel = (r: LabelRow): TaskLabel => ({
  id: r.id,
  name: r.name,
  color: r.color,
  description: r.description,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

export class LabelNameTaken extends Error {
  constructor() {
    super("another label of the organization has this name");
    this.name = "LabelNameTaken";
  }
}

const LABEL_RULES: readonly PgErrorRule[] = [{ code: PG.uniqueViolation, constraint: "labels_name_key", to: () => new LabelNameTaken() }];

export interface LabelPatch {
  name?: string | undefined;
  color?: string | undefined;
  description?: string | null | undefined;
}

export function labelsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  return {
    async insert(org: string, l: { name: string; color: string; description: string | null }): Promise<TaskLabel> {
      const [row] = await sql<LabelRow[]>`
        insert into labels (id, organization_id, name, color, description) values (${newId("lbl")}, ${org}, ${l.name}, ${l.color}, ${l.description})
        returning *`.catch((e: unknown) => mapPgError(e, LABEL_RULES));
      if (!row) throw new Error("insert returned no row");
      return toLabel(row);
    },

    async get(org: string, id: string): Promise<TaskLabel | undefined> {
      const [row] = await sql<LabelRow[]>`select * from labels where organization_id = ${org} and id = ${id}`;
      return row && toLabel(row);
    },

    /**
     * By name as people look for one, ignoring case, then id, on labels_list_idx. The key is an
     * expression, which keyset() does not take, so the cursor's predicate is written here.
     */
    async list(org: string, limit: number, after: string | undefined) {
      const position = after === undefined ? undefined : decodeKeyset(after, 2).map(String);
      const page = sql`
        select *, lower(name) as name_key, octet_length(row_to_json(labels)::text) as bytes from labels
        where organization_id = ${org}
          ${position ? sql`and (lower(name), id) > (${position[0] ?? ""}, ${position[1] ?? ""})` : sql``}
        order by lower(name), id
        limit ${limit + 1}`;
      // Cut at `pageBytes` too, as every list whose items hold free text.
      const rows = await sql<(LabelRow & Budgeted & { name_key: string })[]>`${withinBudget(sql, page, "item.bytes", "item.name_key, item.id", pageBytes)}`;
      return pageOf(rows, limit, toLabel, (r) => [r.name_key, r.id]);
    },

    async update(org: string, id: string, patch: LabelPatch): Promise<TaskLabel | undefined> {
      const [row] = await sql<LabelRow[]>`
        update labels set
          name = ${patch.name === undefined ? sql`name` : sql`${patch.name}`},
          color = ${patch.color === undefined ? sql`color` : sql`${patch.color}`},
          description = ${patch.description === undefined ? sql`description` : sql`${patch.description}`},
          updated_at = now()
        where organization_id = ${org} and id = ${id}
        returning *`.catch((e: unknown) => mapPgError(e, LABEL_RULES));
      return row && toLabel(row);
    },

    /** True when the organization had it. */
    async remove(org: string, id: string): Promise<boolean> {
      const rows = await sql`delete from labels where organization_id = ${org} and id = ${id} returning 1`;
      return rows.length === 1;
    },
  };
}
export type LabelsRepo = ReturnType<typeof labelsRepo>;
