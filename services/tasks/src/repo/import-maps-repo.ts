import { jsonb, newId, type Sql } from "@tasksvc/db";

export type RefKind = "user" | "field" | "option" | "label" | "project";

export interface Ref {
  source_id: string;
  target_id: string | null;
  name: string | null;
  field_type: string | null;
}

/** What a file's ids became in this organization (import_refs, import_tasks), and the lookups by name that make them. */
export function importMapsRepo(sql: Sql) {
  return {
    async putRefs(importId: string, kind: RefKind, refs: readonly Ref[]): Promise<void> {
      if (refs.length === 0) return;
      await sql`
        insert into import_refs (import_id, kind, source_id, target_id, name, field_type)
        select ${importId}, ${kind}, r.source_id, r.target_id, r.name, r.field_type
        from jsonb_to_recordset(${jsonb(sql, refs)}) as r(source_id text, target_id text, name text, field_type text)
        on conflict do nothing`;
    },

    async refs(importId: string, kind: RefKind, sourceIds: readonly string[]): Promise<Map<string, Ref>> {
      if (sourceIds.length === 0) return new Map();
      const rows = await sql<Ref[]>`
        select source_id, target_id, name, field_type from import_refs
        where import_id = ${importId} and kind = ${kind} and source_id = any(${[...new Set(sourceIds)]}::text[])`;
      return new Map(rows.map((r) => [r.source_id, r]));
    },

    async refsNamed(importId: string, kind: RefKind, names: readonly string[]): Promise<Ref[]> {
      if (names.length === 0) return [];
      return sql<Ref[]>`
        select source_id, target_id, name, field_type from import_refs
        where import_id = ${importId} and kind = ${kind} and name = any(${[...new Set(names)]}::text[])`;
    },

    async putTasks(importId: string, tasks: ReadonlyArray<{ source_id: string; task_number: number | null }>): Promise<void> {
      if (tasks.length === 0) return;
      await sql`
        insert into import_tasks (import_id, source_id, task_number)
        select ${importId}, t.source_id, t.task_number from jsonb_to_recordset(${jsonb(sql, tasks)}) as t(source_id text, task_number bigint)`;
    },

    /** Source task id → its task here (null in a dry run); absent when no line of the file made it. */
    async tasks(importId: string, sourceIds: readonly string[]): Promise<Map<string, number | null>> {
      if (sourceIds.length === 0) return new Map();
      const rows = await sql<{ source_id: string; task_number: string | null }[]>`
        select source_id, task_number::text as task_number from import_tasks
        where import_id = ${importId} and source_id = any(${[...new Set(sourceIds)]}::text[])`;
      return new Map(rows.map((r) => [r.source_id, r.task_number === null ? null : Number(r.task_number)]));
    },

    /** Exact names (a project's name is unique as written). */
    async projectsNamed(org: string, names: readonly string[]): Promise<Map<string, string>> {
      if (names.length === 0) return new Map();
      const rows = await sql<{ id: string; name: string }[]>`
        select id, name from projects where organization_id = ${org} and name = any(${[...new Set(names)]}::text[])`;
      return new Map(rows.map((r) => [r.name, r.id]));
    },

    /** A name someone else took meanwhile is left to them: the caller looks the names up again. */
    async insertProjects(org: string, projects: ReadonlyArray<{ name: string; description: string | null }>): Promise<void> {
      if (projects.length === 0) return;
      const rows = projects.map((p) => ({ id: newId("prj"), ...p }));
      await sql`
        insert into projects (id, organization_id, name, description)
        select p.id, ${org}, p.name, p.description from jsonb_to_recordset(${jsonb(sql, rows)}) as p(id text, name text, description text)
        on conflict (organization_id, name) do nothing`;
    },

    /** Keyed by the lower-cased name (labels are unique ignoring case). */
    async labelsNamed(org: string, names: readonly string[]): Promise<Map<string, string>> {
      if (names.length === 0) return new Map();
      const lowered = [...new Set(names.map((n) => n.toLowerCase()))];
      const rows = await sql<{ id: string; key: string }[]>`
        select id, lower(name) as key from labels where organization_id = ${org} and lower(name) = any(${lowered}::text[])`;
      return new Map(rows.map((r) => [r.key, r.id]));
    },

    async insertLabels(org: string, labels: ReadonlyArray<{ name: string; color: string; description: string | null }>): Promise<void> {
      if (labels.length === 0) return;
      const rows = labels.map((l) => ({ id: newId("lbl"), ...l }));
      await sql`
        insert into labels (id, organization_id, name, color, description)
        select l.id, ${org}, l.name, l.color, l.description from jsonb_to_recordset(${jsonb(sql, rows)}) as l(id text, name text, color text, description text)
        on conflict (organization_id, lower(name)) do nothing`;
    },

    /** Which of the ids still name a project (or label) of the organization: one deleted since the file mapped it is a reference lost. */
    async existing(org: string, table: "projects" | "labels", ids: readonly string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await sql<{ id: string }[]>`
        select id from ${sql(table)} where organization_id = ${org} and id = any(${[...new Set(ids)]}::text[])`;
      return new Set(rows.map((r) => r.id));
    },
  };
}
export type ImportMapsRepo = ReturnType<typeof importMapsRepo>;
