import { CreateLabelBody, CreateProjectBody, CreateTaskBody, DEFAULT_LABEL_COLOR, Email, MAX_ASSIGNEES, MAX_TASK_LABELS } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { toPointer } from "@tasksvc/errors";
import { parse } from "csv-parse/sync";
import type { NewTask } from "../../repo/task-create.js";
import { createdContent } from "../task-content.js";
import type { RawRecord } from "./records.js";
import { type ChunkWork, FileRefused, type FormatReader, type ImportRun, type MemberLookup, type Problem, problem, zodProblems } from "./tally.js";

/** The columns a CSV file may have, in any order; only title is required. */
export const CSV_COLUMNS = ["title", "description", "status", "priority", "due_date", "project", "labels", "assignee"] as const;
type Column = (typeof CSV_COLUMNS)[number];
const isColumn = (name: string): name is Column => (CSV_COLUMNS as readonly string[]).includes(name);

const OPTIONS = { relax_column_count: true, record_delimiter: "\n", bom: false } as const;

interface Row {
  rec: RawRecord;
  problems: Problem[];
  values?: string[];
}

/** One csv-parse call for the chunk's well-formed rows (about ten times faster than one per row); row by row only when that call fails. */
function parseRows(records: readonly RawRecord[]): Row[] {
  const rows: Row[] = records.map((rec) => {
    if (rec.bytes === null) return { rec, problems: [problem("", "line_too_long", "the row is longer than the largest row an import takes")] };
    if (rec.malformed !== undefined) return { rec, problems: [problem("", "invalid_csv", rec.malformed)] };
    return { rec, problems: [] };
  });
  const fed = rows.filter((r) => r.problems.length === 0 && (r.rec.bytes?.length ?? 0) > 0);
  let all: string[][] | undefined;
  try {
    const parsed = parse(Buffer.concat(fed.map((r) => Buffer.concat([r.rec.bytes as Buffer, Buffer.from("\n")]))), OPTIONS) as string[][];
    if (parsed.length === fed.length) all = parsed;
  } catch {
    all = undefined;
  }
  fed.forEach((r, i) => {
    if (all) r.values = all[i];
    else {
      try {
        const one = parse(r.rec.bytes as Buffer, OPTIONS) as string[][];
        if (one.length === 1) r.values = one[0];
        else r.problems.push(problem("", "invalid_csv", "the row is not one CSV record"));
      } catch (e) {
        r.problems.push(problem("", "invalid_csv", e instanceof Error ? e.message : String(e)));
      }
    }
  });
  return rows;
}

const cell = (values: readonly string[], at: number | undefined) => {
  const v = at === undefined ? undefined : values[at];
  return v === undefined || v === "" ? undefined : v;
};
const listOf = (v: string | undefined) =>
  v === undefined
    ? []
    : v
        .split(";")
        .map((s) => s.trim())
        .filter((s) => s !== "");

function checkList(names: readonly string[], pointer: string, max: number, what: string, each: (n: string) => string | undefined): Problem[] {
  if (names.length > max) return [problem(pointer, "validation_failed", `must name at most ${max} ${what}s`)];
  const seen = new Set<string>();
  for (const n of names) {
    const why = each(n);
    if (why !== undefined) return [problem(pointer, "validation_failed", `${JSON.stringify(n)} ${why}`)];
    if (seen.has(n.toLowerCase())) return [problem(pointer, "validation_failed", `must not repeat a ${what} (${JSON.stringify(n)})`)];
    seen.add(n.toLowerCase());
  }
  return [];
}
const refusal = (schema: { safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ message: string }> } } }) => (v: string) => {
  const r = schema.safeParse(v);
  return r.success ? undefined : (r.error?.issues[0]?.message ?? "is invalid");
};

interface Candidate {
  line: number;
  body: CreateTaskBody;
  project?: string | undefined;
  labels: string[];
  emails: string[];
}

/** A CSV file: a header row, then one task a row. */
export function csvReader(run: ImportRun, deps: { members: MemberLookup; now: () => Date }) {
  let columns: Map<Column, number> | undefined;
  let width = 0;

  function header(rec: RawRecord): Problem[] {
    if (rec.bytes === null || rec.malformed !== undefined) {
      throw new FileRefused({
        line: 1,
        pointer: "",
        code: "invalid_csv",
        detail: rec.malformed ?? "the header row is longer than the largest row an import takes",
      });
    }
    const [names] = parseRows([rec]).map((r) => r.values ?? []);
    const notes: Problem[] = [];
    columns = new Map();
    width = names?.length ?? 0;
    (names ?? []).forEach((raw, i) => {
      const name = raw.trim().toLowerCase();
      if (!isColumn(name))
        notes.push(problem(toPointer([raw]), "unknown_column", `is not a column an import reads (${CSV_COLUMNS.join(", ")}); its values are ignored`));
      else if (columns?.has(name))
        throw new FileRefused({ line: 1, pointer: toPointer([raw]), code: "invalid_csv", detail: "the header names this column twice" });
      else columns?.set(name, i);
    });
    if (!columns.has("title")) throw new FileRefused({ line: 1, pointer: "/title", code: "missing_column", detail: "the header row has no title column" });
    return notes;
  }

  function candidate(row: Row): Candidate | undefined {
    const values = row.values;
    const at = columns;
    if (values === undefined || at === undefined) return undefined;
    if (values.length !== width) {
      row.problems.push(problem("", "invalid_csv", `has ${values.length} values; the header names ${width} columns`));
      return undefined;
    }
    const get = (c: Column) => cell(values, at.get(c));
    const given = { title: get("title") ?? "", description: get("description"), status: get("status"), priority: get("priority"), due_date: get("due_date") };
    const body = CreateTaskBody.safeParse(Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)));
    if (!body.success) row.problems.push(...zodProblems(body.error));
    const project = get("project");
    const projectName = project === undefined ? undefined : CreateProjectBody.shape.name.safeParse(project);
    if (projectName && !projectName.success) row.problems.push(problem("/project", "validation_failed", projectName.error.issues[0]?.message ?? "is invalid"));
    const labels = listOf(get("labels"));
    row.problems.push(...checkList(labels, "/labels", MAX_TASK_LABELS, "label", refusal(CreateLabelBody.shape.name)));
    const emails = listOf(get("assignee"));
    row.problems.push(...checkList(emails, "/assignee", MAX_ASSIGNEES, "assignee", refusal(Email)));
    if (!body.success || row.problems.length > 0) return undefined;
    return { line: row.rec.line, body: body.data, project: projectName?.data, labels: labels.map((l) => l.trim()), emails };
  }

  const reader: FormatReader & { header(rec: RawRecord): Problem[] } = {
    header,
    // Parsing and the member lookup: projects and labels are matched inside the write.
    preparesAhead: true,
    async prepare(records): Promise<ChunkWork> {
      const rows = parseRows(records);
      const ready = new Map<Row, Candidate>();
      for (const row of rows) {
        if (row.problems.length > 0 || row.values === undefined) continue;
        const c = candidate(row);
        if (c) ready.set(row, c);
      }
      const members = await deps.members(
        run,
        [...ready.values()].flatMap((c) => c.emails),
      );
      for (const [row, c] of ready) {
        const stranger = c.emails.find((e) => !members.has(e.toLowerCase()));
        if (stranger === undefined) continue;
        row.problems.push(problem("/assignee", "not_a_member", `${stranger} is not the email of a member of this organization`));
        ready.delete(row);
      }
      return {
        async write(r, tally) {
          const org = run.org;
          const projectNames = [...new Set([...ready.values()].flatMap((c) => (c.project === undefined ? [] : [c.project])))];
          // The first spelling of a label names it when it is made.
          const firstSpelling = new Map<string, string>();
          for (const l of [...ready.values()].flatMap((c) => c.labels)) if (!firstSpelling.has(l.toLowerCase())) firstSpelling.set(l.toLowerCase(), l);
          const labelNames = [...firstSpelling.values()];
          let projects = await r.importMaps.projectsNamed(org, projectNames);
          let labels = await r.importMaps.labelsNamed(org, labelNames);
          if (!run.dryRun) {
            // Made on first use, as named; a dry run makes nothing and counts them as found.
            const newProjects = projectNames.filter((n) => !projects.has(n));
            const newLabels = labelNames.filter((n) => !labels.has(n.toLowerCase()));
            if (newProjects.length > 0) {
              await r.importMaps.insertProjects(
                org,
                newProjects.map((name) => ({ name, description: null })),
              );
              projects = await r.importMaps.projectsNamed(org, projectNames);
            }
            if (newLabels.length > 0) {
              await r.importMaps.insertLabels(
                org,
                newLabels.map((name) => ({ name, color: DEFAULT_LABEL_COLOR, description: null })),
              );
              labels = await r.importMaps.labelsNamed(org, labelNames);
            }
          }
          const items: NewTask[] = [];
          for (const row of rows) {
            if (row.rec.bytes !== null && row.rec.bytes.length === 0 && row.problems.length === 0) continue;
            const c = ready.get(row);
            if (!c) {
              tally.fail(row.rec.line, row.problems);
              continue;
            }
            const projectIds = c.project === undefined ? [] : [projects.get(c.project) ?? `new:${c.project}`];
            const labelIds = c.labels.map((l) => labels.get(l.toLowerCase()) ?? `new:${l}`);
            const assignees = c.emails.map((e) => members.get(e.toLowerCase()) as string);
            const body = { ...c.body, label_ids: labelIds, assignee_ids: assignees };
            const content = createdContent(body, { projectIds, parent: null, custom: {} }, deps.now());
            items.push({
              owner: run.userId,
              actor: run.userId,
              by: run.stamp,
              content,
              versionId: newId("ver"),
              eventId: newId("evt"),
              credentialId: null,
              key: null,
            });
          }
          if (run.dryRun) tally.created += items.length;
          else if (items.length > 0) tally.created += (await r.tasks.create(org, items)).length;
        },
      };
    },
  };
  return reader;
}
