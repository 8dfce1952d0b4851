import type { Project } from "@tasksvc/contracts";
import {
  type Budgeted,
  DEFAULT_PAGE_BYTES,
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
import { iso, TASK_COLUMNS, type TaskRow } from "./task-json.js";

interface ProjectRow {
  id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
  cursor_at: string;
}
const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  name: r.name,
  description: r.description,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

export class ProjectNameTaken extends Error {
  constructor() {
    super("another project of the organization has this name");
    this.name = "ProjectNameTaken";
  }
}

const PROJECT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

const PROJECT_RULES: readonly PgErrorRule[] = [{ code: PG.uniqueViolation, constraint: "projects_name_key", to: () => new ProjectNameTaken() }];

export function projectsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const cols = sql.unsafe(TASK_COLUMNS);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  return {
    async missing(org: string, ids: string[]): Promise<string[]> {
      if (ids.length === 0) return [];
      const rows = await sql<{ id: string }[]>`select id from projects where organization_id = ${org} and id = any(${ids}::text[])`;
      const found = new Set(rows.map((r) => r.id));
      return ids.filter((id) => !found.has(id));
    },

    async insert(org: string, name: string, description: string | null): Promise<Project> {
      const [row] = await sql<ProjectRow[]>`
        insert into projects (id, organization_id, name, description) values (${newId("prj")}, ${org}, ${name}, ${description})
        returning *, '' as cursor_at`.catch((e: unknown) => mapPgError(e, PROJECT_RULES));
      if (!row) throw new Error("insert returned no row");
      return toProject(row);
    },

    async get(org: string, id: string): Promise<Project | undefined> {
      const [row] = await sql<ProjectRow[]>`select *, '' as cursor_at from projects where organization_id = ${org} and id = ${id}`;
      return row && toProject(row);
    },

    /** Cut at `pageBytes` too: a hundred descriptions of 2,000 control characters are more than a message carries. */
    async list(org: string, limit: number, after: string | undefined) {
      const page = sql`
        select *, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at, octet_length(row_to_json(projects)::text) as bytes from projects
        where organization_id = ${org}
          ${keysetAfter(sql, after, PROJECT_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      const rows = await sql<(ProjectRow & Budgeted)[]>`${withinBudget(sql, page, "item.bytes", "item.created_at desc, item.id desc", pageBytes)}`;
      return pageOf(rows, limit, toProject, (r) => [r.cursor_at, r.id]);
    },

    async update(org: string, id: string, patch: { name?: string | undefined; description?: string | null | undefined }): Promise<Project | undefined> {
      const [row] = await sql<ProjectRow[]>`
        update projects set
          name = ${patch.name === undefined ? sql`name` : sql`${patch.name}`},
          description = ${patch.description === undefined ? sql`description` : sql`${patch.description}`},
          updated_at = now()
        where organization_id = ${org} and id = ${id}
        returning *, '' as cursor_at`.catch((e: unknown) => mapPgError(e, PROJECT_RULES));
      return row && toProject(row);
    },

    async remove(org: string, id: string): Promise<{ deleted: boolean; tasks: Array<TaskRow & { old_project_ids: string[] }> }> {
      // The project ids before the change too, for the events' `changes`.
      const tasks = await sql<Array<TaskRow & { old_project_ids: string[] }>>`
        with b as (
          select number as n, project_ids as old_project_ids from tasks
          where organization_id = ${org} and number in (select task_number from task_projects where organization_id = ${org} and project_id = ${id})
          for no key update
        )
        update tasks set project_ids = array_remove(project_ids, ${id}), version = version + 1
        from b where organization_id = ${org} and number = b.n
        returning ${cols}, b.old_project_ids`;
      const rows = await sql`delete from projects where organization_id = ${org} and id = ${id} returning 1`;
      return { deleted: rows.length === 1, tasks };
    },
  };
}
export type ProjectsRepo = ReturnType<typeof projectsRepo>;
