import type { CustomField, CustomFieldDefinition, CustomFieldOption, CustomFieldType } from "@tasksvc/contracts";
import {
  type Budgeted,
  DEFAULT_PAGE_BYTES,
  jsonb,
  KEYSET_TIME,
  keyset,
  keysetAfter,
  mapPgError,
  newId,
  pageOf,
  PG,
  type PgErrorRule,
  type Sql,
  withinBudget,
} from "@tasksvc/db";
import { iso } from "./task-json.js";

interface FieldRow {
  id: string;
  key: string;
  name: string;
  type: CustomFieldType;
  options: CustomFieldOption[];
  description: string | null;
  created_at: Date;
  updated_at: Date;
}
const toField = (r: FieldRow): CustomField => ({
  id: r.id,
  key: r.key,
  name: r.name,
  type: r.type,
  // The stored order is the order given; each option rebuilt so its keys come in the documented order.
  options: r.options.map((o) => ({ id: o.id, name: o.name, color: o.color })),
  description: r.description,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

/** A definition as a task write checks values against it; `stamp` is the row's version (xmin), to see later that it is unchanged. */
export type StampedDefinition = CustomFieldDefinition & { stamp: string };

export class FieldKeyTaken extends Error {
  constructor() {
    super("another custom field of the organization has this key");
    this.name = "FieldKeyTaken";
  }
}

const FIELD_RULES: readonly PgErrorRule[] = [{ code: PG.uniqueViolation, constraint: "custom_fields_key_key", to: () => new FieldKeyTaken() }];
const FIELD_PAGES = keyset("asc", ["created_at", "timestamp"], ["id", "text"]);

export interface NewField {
  key: string;
  name: string;
  type: CustomFieldType;
  options: CustomFieldOption[];
  description: string | null;
}

export interface FieldPatch {
  name?: string | undefined;
  description?: string | null | undefined;
  options?: CustomFieldOption[] | undefined;
}

export function customFieldsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const keysetTime = sql.unsafe(KEYSET_TIME);
  return {
    /**
     * Held to the commit by every create and delete of the organization's fields: the count a create
     * checks cannot be passed by a create racing it, and a key is not reused while a delete of it
     * commits (see keyBeingRemoved). Answers how many fields the organization has.
     */
    async lockOrganization(org: string): Promise<number> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.custom_fields:${org}`}, 0))`;
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from custom_fields where organization_id = ${org}`;
      return row?.n ?? 0;
    },

    /** Whether the values of a deleted field with this key are still being taken off tasks. */
    async keyBeingRemoved(org: string, key: string): Promise<boolean> {
      const rows = await sql`select 1 from removals where organization_id = ${org} and kind = 'field' and field_key = ${key} limit 1`;
      return rows.length > 0;
    },

    async insert(org: string, f: NewField): Promise<CustomField> {
      const [row] = await sql<FieldRow[]>`
        insert into custom_fields (id, organization_id, key, name, type, options, description)
        values (${newId("fld")}, ${org}, ${f.key}, ${f.name}, ${f.type}, ${jsonb(sql, f.options)}, ${f.description})
        returning *`.catch((e: unknown) => mapPgError(e, FIELD_RULES));
      if (!row) throw new Error("insert returned no row");
      return toField(row);
    },

    /** `lock`: the row is held (for update) to the commit, as a change of its options is worked out from it. */
    async get(org: string, id: string, lock = false): Promise<CustomField | undefined> {
      const [row] = await sql<FieldRow[]>`
        select * from custom_fields where organization_id = ${org} and id = ${id} ${lock ? sql`for update` : sql``}`;
      return row && toField(row);
    },

    /** Oldest first, on custom_fields_list_idx; cut at `pageBytes` too, as every list whose items hold free text. */
    async list(org: string, limit: number, after: string | undefined) {
      const page = sql`
        select *, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at, octet_length(row_to_json(custom_fields)::text) as bytes
        from custom_fields
        where organization_id = ${org}
          ${keysetAfter(sql, after, FIELD_PAGES)}
        order by created_at, id
        limit ${limit + 1}`;
      const rows = await sql<(FieldRow & Budgeted & { cursor_at: string })[]>`${withinBudget(sql, page, "item.bytes", "item.created_at, item.id", pageBytes)}`;
      return pageOf(rows, limit, toField, (r) => [r.cursor_at, r.id]);
    },

    /**
     * The organization's definitions of those keys (unknown keys are simply absent). `lock` takes
     * them for share to the commit, so a change or delete of a definition waits for the write that
     * checked values against it, and that write for the change.
     */
    async definitions(org: string, keys: readonly string[], lock: boolean): Promise<StampedDefinition[]> {
      if (keys.length === 0) return [];
      const rows = await sql<Array<Pick<FieldRow, "id" | "key" | "type" | "options"> & { stamp: string }>>`
        select id, key, type, options, xmin::text as stamp from custom_fields
        where organization_id = ${org} and key = any(${keys as string[]}::text[])
        ${lock ? sql`for share` : sql``}`;
      return rows.map((r) => ({ id: r.id, key: r.key, type: r.type, options: r.options, stamp: r.stamp }));
    },

    async update(org: string, id: string, patch: FieldPatch): Promise<CustomField | undefined> {
      const [row] = await sql<FieldRow[]>`
        update custom_fields set
          name = ${patch.name === undefined ? sql`name` : sql`${patch.name}`},
          description = ${patch.description === undefined ? sql`description` : sql`${patch.description}`},
          options = ${patch.options === undefined ? sql`options` : sql`${jsonb(sql, patch.options)}`},
          updated_at = now()
        where organization_id = ${org} and id = ${id}
        returning *`;
      return row && toField(row);
    },

    /** The deleted field's key, or undefined when the organization had no such field. */
    async remove(org: string, id: string): Promise<string | undefined> {
      const [row] = await sql<{ key: string }[]>`delete from custom_fields where organization_id = ${org} and id = ${id} returning key`;
      return row?.key;
    },
  };
}
export type CustomFieldsRepo = ReturnType<typeof customFieldsRepo>;
