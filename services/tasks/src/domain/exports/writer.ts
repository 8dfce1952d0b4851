import type { CustomField, ExportFormat, ExportPart, Page } from "@tasksvc/contracts";
import { stringify } from "csv-stringify/sync";
import type { CommentPosition, ExportReads } from "../../repo/export-reads.js";
import { toTask } from "../../repo/task-json.js";
import type { Repositories } from "../../repo/repositories.js";
import { type FileSink, fileSink, removeFiles, tempName } from "./files.js";
import { tasksInOrder, versionLinesInOrder } from "./chunks.js";
import {
  commentLine,
  csvHeader,
  csvRefs,
  csvRow,
  dependencyLine,
  exportLines,
  fieldLine,
  labelLine,
  type Line,
  memberLine,
  projectLine,
  userFieldKeys,
  usersOfComment,
} from "./format.js";

/** Rows per statement at most, whatever their size. */
const ROWS = 500;
/** Users per request to the keys service. */
const EMAILS_PER_CALL = 200;

export interface SnapshotReads {
  reads: ExportReads;
  repos: Repositories;
}

export interface WriterDeps {
  /** All reads of one export in one `repeatable read, read only` transaction. */
  snapshot<T>(fn: (s: SnapshotReads) => Promise<T>): Promise<T>;
  /** The emails of at most 200 users; those the keys service does not know are absent. */
  emails(userIds: readonly string[]): Promise<Map<string, string>>;
  tmpDir: string;
}

export interface ExportRun {
  org: string;
  id: string;
  format: ExportFormat;
  parts: ReadonlySet<ExportPart>;
  /** After each chunk: progress (tasks), the lease, the stop check. Throws to stop the run. */
  tick(done: number, total: number): Promise<void>;
}

export interface Written {
  /** To be sent in this order, then removed. */
  paths: string[];
  size: number;
  tasks: number;
}

async function allPages<T>(page: (after: string | undefined) => Promise<Page<T>>, each: (item: T) => Promise<void>): Promise<void> {
  let after: string | undefined;
  do {
    const p = await page(after);
    for (const item of p.data) await each(item);
    after = p.has_more && p.next_cursor !== null ? p.next_cursor : undefined;
  } while (after !== undefined);
}

const line = (l: Line) => `${JSON.stringify(l)}\n`;

/** Looks each id up once per export; bounded by the organization's distinct people, projects and labels. */
function lookups(deps: WriterDeps, reads: () => ExportReads, org: string) {
  const emails = new Map<string, string | null>();
  const projects = new Map<string, string | null>();
  const labels = new Map<string, string | null>();
  const fill = async (into: Map<string, string | null>, ids: Iterable<string>, fetch: (ids: string[]) => Promise<Map<string, string>>, per: number) => {
    const missing = [...ids].filter((id) => !into.has(id));
    for (let i = 0; i < missing.length; i += per) {
      const batch = missing.slice(i, i + per);
      const found = await fetch(batch);
      for (const id of batch) into.set(id, found.get(id) ?? null);
    }
  };
  return {
    emails,
    async need(refs: { projects: Iterable<string>; labels: Iterable<string>; users: Iterable<string> }): Promise<void> {
      await fill(projects, refs.projects, (ids) => reads().names(org, "projects", ids), ROWS);
      await fill(labels, refs.labels, (ids) => reads().names(org, "labels", ids), ROWS);
      await fill(emails, refs.users, (ids) => deps.emails(ids), EMAILS_PER_CALL);
    },
    names: {
      project: (id: string) => projects.get(id) ?? undefined,
      label: (id: string) => labels.get(id) ?? undefined,
      email: (id: string) => emails.get(id) ?? undefined,
    },
  };
}

/**
 * Writes one export to temporary files: one snapshot, read in chunks, each chunk written before
 * the next is read, so memory holds a chunk and the lookups whatever the organization's size. The
 * member lines come first in the file but are known last, so they go to a file of their own, sent first.
 */
export async function writeExport(deps: WriterDeps, run: ExportRun): Promise<Written> {
  const body = fileSink(tempName(deps.tmpDir, run.id, "body"));
  const head = fileSink(tempName(deps.tmpDir, run.id, "head"));
  try {
    let snapshotReads: ExportReads | undefined;
    const look = lookups(
      deps,
      () => {
        if (!snapshotReads) throw new Error("names are looked up inside the snapshot");
        return snapshotReads;
      },
      run.org,
    );
    const people = new Set<string>();
    const tasks = await deps.snapshot(async ({ reads, repos }) => {
      snapshotReads = reads;
      return run.format === "csv" ? writeCsv(reads, repos, run, body, look) : writeJsonl(reads, repos, run, body, people);
    });
    if (run.format === "jsonl") {
      await look.need({ projects: [], labels: [], users: people });
      for (const id of [...people].sort()) {
        const email = look.emails.get(id);
        // A user the keys service no longer knows is left out; an importer drops references to them.
        if (email) await head.write(line(memberLine(id, email)));
      }
    }
    const size = (await head.close()) + (await body.close());
    return { paths: [head.path, body.path], size, tasks };
  } catch (e) {
    head.abandon();
    body.abandon();
    await removeFiles([head.path, body.path]);
    throw e;
  }
}

async function definitions(repos: Repositories, org: string): Promise<CustomField[]> {
  const fields: CustomField[] = [];
  await allPages(
    (after) => repos.customFields.list(org, 100, after),
    async (f) => void fields.push(f),
  );
  return fields;
}

async function writeJsonl(reads: ExportReads, repos: Repositories, run: ExportRun, out: FileSink, people: Set<string>): Promise<number> {
  const { org, parts } = run;
  const total = parts.has("tasks") ? await reads.taskCount(org) : 0;
  let done = 0;
  await run.tick(done, total);
  const fields = await definitions(repos, org);
  const userKeys = userFieldKeys(fields);
  if (parts.has("custom_fields")) for (const f of fields) await out.write(line(fieldLine(f)));
  if (parts.has("labels"))
    await allPages(
      (after) => repos.labels.list(org, 100, after),
      (l) => out.write(line(labelLine(l))),
    );
  if (parts.has("projects"))
    await allPages(
      (after) => repos.projects.list(org, 100, after),
      (p) => out.write(line(projectLine(p))),
    );
  const keys = [...userKeys];
  if (parts.has("tasks")) {
    for await (const chunk of tasksInOrder(reads, org, (numbers) => reads.taskLines(org, numbers, keys))) {
      await out.writeLines(exportLines("task", chunk, people));
      done += chunk.length;
      await run.tick(done, total);
    }
  }
  if (parts.has("history")) {
    for await (const lines of versionLinesInOrder(reads, org, keys)) {
      await out.writeLines(exportLines("task_version", lines, people));
      await run.tick(done, total);
    }
  }
  if (parts.has("tasks")) {
    let after: [number, number] = [0, 0];
    for (;;) {
      const edges = await reads.dependencies(org, after, ROWS * 4);
      const last = edges[edges.length - 1];
      if (last === undefined) break;
      for (const e of edges) await out.write(line(dependencyLine(e.blocked, e.blocker)));
      after = [last.blocked, last.blocker];
      await run.tick(done, total);
    }
  }
  if (parts.has("comments")) {
    let after: CommentPosition | null = null;
    for (;;) {
      const page = await reads.comments(org, after, ROWS);
      if (page.last === null) break;
      for (const c of page.items) {
        usersOfComment(c, people);
        await out.write(line(commentLine(c)));
      }
      after = page.last;
      await run.tick(done, total);
    }
  }
  return done;
}

async function writeCsv(reads: ExportReads, repos: Repositories, run: ExportRun, out: FileSink, look: ReturnType<typeof lookups>): Promise<number> {
  const { org, parts } = run;
  const total = await reads.taskCount(org);
  let done = 0;
  await run.tick(done, total);
  const fields = parts.has("custom_fields") ? await definitions(repos, org) : [];
  await out.write(stringify([csvHeader(fields)]));
  for await (const chunk of tasksInOrder(reads, org, async (numbers) => (await reads.tasks(org, numbers)).map(toTask))) {
    const refs = csvRefs(chunk, fields);
    await look.need({
      projects: parts.has("projects") ? refs.projects : [],
      labels: parts.has("labels") ? refs.labels : [],
      users: refs.users,
    });
    const shown = chunk.map((t) => ({ ...t, project_ids: parts.has("projects") ? t.project_ids : [], label_ids: parts.has("labels") ? t.label_ids : [] }));
    await out.write(stringify(shown.map((t) => csvRow(t, fields, look.names))));
    done += chunk.length;
    await run.tick(done, total);
  }
  return done;
}
