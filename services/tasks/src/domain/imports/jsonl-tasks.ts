import { CreateTaskBody, CustomFieldValue, type CustomFieldType, TaskRef } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { z } from "zod";
import type { StampedDefinition } from "../../repo/custom-fields-repo.js";
import type { Ref } from "../../repo/import-maps-repo.js";
import type { NewTask } from "../../repo/task-create.js";
import { toTask } from "../../repo/task-json.js";
import { type CustomValues, mergedValues } from "../custom-values.js";
import { changesOf } from "../events/changes.js";
import { createdContent } from "../task-content.js";
import { appProblems, type JsonlDeps, type Line, type LineHandler, problem, type Problem, zodProblems } from "./tally.js";

const TaskLine = z.looseObject({
  id: TaskRef,
  parent_task_id: TaskRef.nullable().optional(),
  owner_id: z.string().optional(),
  assignee_ids: z.array(z.string()).optional(),
  label_ids: z.array(z.string()).optional(),
  project_ids: z.array(z.string()).optional(),
  custom_fields: z.record(z.string(), CustomFieldValue).optional(),
  archived: z.boolean().optional(),
  recurrence: z.record(z.string(), z.unknown()).nullable().optional(),
});
type TaskLine = z.output<typeof TaskLine>;

const CONTENT = ["title", "description", "status", "priority", "start_date", "due_date", "notes", "story_points"] as const;
const RULE = ["frequency", "interval", "by_month_day", "basis", "timezone", "start_date", "end_date", "max_occurrences", "rollover_enabled", "active"];

/** A task's recurrence as the API shows it, as a create takes it: the fields it names (its rrule says the same). */
function recurrenceInput(r: Record<string, unknown> | null | undefined): Record<string, unknown> | undefined {
  if (!r) return undefined;
  const out: Record<string, unknown> = Object.fromEntries(RULE.filter((k) => r[k] !== null && r[k] !== undefined).map((k) => [k, r[k]]));
  if (Array.isArray(r["by_weekday"]) && r["by_weekday"].length > 0) out["by_weekday"] = r["by_weekday"];
  if (out["frequency"] === undefined && typeof r["rrule"] === "string") out["rrule"] = r["rrule"];
  return out;
}

interface Ready {
  line: number;
  source: string;
  body: CreateTaskBody;
  owner: string;
  custom: CustomValues;
  projectIds: string[];
  /** A task of an earlier chunk (null in a dry run), or one of this chunk by its source id. */
  parent: { number: number | null } | { source: string } | null;
  archived: boolean;
  fieldsSeen: Array<{ id: string; stamp: string }>;
}

/** Tasks: each after its parent; content as it is now, as version 1, with its references mapped. */
export function taskHandler(deps: JsonlDeps): LineHandler {
  const { run, repos } = deps;
  const maps = repos.importMaps;
  const placeholder = (r: Ref) => r.target_id ?? `new:${r.source_id}`;

  return {
    async prepare(lines: readonly Line[]) {
      const parsed = lines.map((l) => ({ line: l.line, obj: l.obj, t: TaskLine.safeParse(l.obj) }));
      const good = parsed.flatMap((p) => (p.t.success ? [p.t.data] : []));
      const strings = (f: (t: TaskLine) => unknown[]) => good.flatMap(f).filter((v): v is string => typeof v === "string");
      const customKeys = [...new Set(good.flatMap((t) => Object.keys(t.custom_fields ?? {})))];
      const fieldRefs = await maps.refsNamed(run.id, "field", customKeys);
      // Only the values of user fields name people.
      const userKeys = new Set(fieldRefs.flatMap((f) => (f.field_type === "user" && f.name !== null ? [f.name] : [])));
      const userValues = (t: TaskLine) => Object.entries(t.custom_fields ?? {}).flatMap(([k, v]) => (userKeys.has(k) ? [v] : []));
      const [users, labels, projects, optionRefs, known] = await Promise.all([
        maps.refs(
          run.id,
          "user",
          strings((t) => [t.owner_id, ...(t.assignee_ids ?? []), ...userValues(t)]),
        ),
        maps.refs(
          run.id,
          "label",
          strings((t) => t.label_ids ?? []),
        ),
        maps.refs(
          run.id,
          "project",
          strings((t) => t.project_ids ?? []),
        ),
        maps.refsNamed(run.id, "option", customKeys),
        maps.tasks(
          run.id,
          strings((t) => [t.id, t.parent_task_id]),
        ),
      ]);
      const fields = new Map(fieldRefs.map((f) => [f.name ?? "", f]));
      const options = new Map(optionRefs.map((o) => [o.source_id, o]));
      const targets = (m: Map<string, Ref>) => [...m.values()].flatMap((x) => (x.target_id === null ? [] : [x.target_id]));
      // A label or project deleted since its line was read is a lost reference, not a failed statement.
      const [liveLabels, liveProjects, defs] = run.dryRun
        ? [undefined, undefined, fieldRefs.map((f): StampedDefinition => dryDefinition(f, optionRefs))]
        : await Promise.all([
            maps.existing(run.org, "labels", targets(labels)),
            maps.existing(run.org, "projects", targets(projects)),
            repos.customFields.definitions(run.org, customKeys, false),
          ]);

      const mapIds = (ids: string[] | undefined, m: Map<string, Ref>, live: Set<string> | undefined, at: string, what: string, out: Problem[]) =>
        (ids ?? []).map((src, i) => {
          const r = m.get(src);
          if (!r) out.push(problem(`${at}/${i}`, "unknown_reference", `${what} ${src} is not defined by an earlier line of the file (or its line failed)`));
          else if (live && r.target_id !== null && !live.has(r.target_id))
            out.push(problem(`${at}/${i}`, "unknown_reference", `${what} ${src} was deleted meanwhile`));
          return r ? placeholder(r) : src;
        });
      const member = (src: unknown) => (typeof src === "string" ? (users.get(src)?.target_id ?? null) : null);

      function customOf(t: TaskLine, out: Problem[]): Record<string, CustomFieldValue> | undefined {
        if (t.custom_fields === undefined) return undefined;
        const mapped: Record<string, CustomFieldValue> = {};
        for (const [key, value] of Object.entries(t.custom_fields)) {
          const field = fields.get(key);
          const at = `/custom_fields/${key}`;
          if (!field) {
            out.push(problem(at, "unknown_reference", `no custom_field line of the file defines ${key} (or its line failed)`));
            continue;
          }
          const option = (v: string) => {
            const o = options.get(v);
            if (!o || o.name !== key) out.push(problem(at, "unknown_reference", `${v} is not an option of ${key} in the file`));
            return o ? placeholder(o) : v;
          };
          const type = field.field_type as CustomFieldType;
          if (type === "select" && typeof value === "string") mapped[key] = option(value);
          else if (type === "multi_select" && Array.isArray(value)) mapped[key] = value.map(option);
          else if (type === "user") {
            // A person who is not a member here is dropped, as an assignee would be.
            const id = member(value);
            if (id !== null) mapped[key] = id;
          } else mapped[key] = value;
        }
        return mapped;
      }

      const okSources = new Set<string>();
      const outcomes: Array<{ line: number; problems: Problem[] } | Ready> = [];
      for (const p of parsed) {
        if (!p.t.success) {
          outcomes.push({ line: p.line, problems: zodProblems(p.t.error) });
          continue;
        }
        const t = p.t.data;
        const out: Problem[] = [];
        if (known.has(t.id) || okSources.has(t.id)) out.push(problem("/id", "validation_failed", `another task line of the file has the id ${t.id}`));
        const label_ids = mapIds(t.label_ids, labels, liveLabels, "/label_ids", "label", out);
        const project_ids = mapIds(t.project_ids, projects, liveProjects, "/project_ids", "project", out);
        const assignee_ids = (t.assignee_ids ?? []).map(member).filter((id): id is string => id !== null);
        const custom_fields = customOf(t, out);
        let parent: Ready["parent"] = null;
        if (t.parent_task_id) {
          if (known.has(t.parent_task_id)) parent = { number: known.get(t.parent_task_id) ?? null };
          else if (okSources.has(t.parent_task_id)) parent = { source: t.parent_task_id };
          else out.push(problem("/parent_task_id", "unknown_reference", `no earlier task line of the file is ${t.parent_task_id} (or its line failed)`));
        }
        const candidate = { ...given(p.obj), recurrence: recurrenceInput(t.recurrence), label_ids, project_ids, assignee_ids, custom_fields };
        const body = CreateTaskBody.safeParse(Object.fromEntries(Object.entries(candidate).filter(([, v]) => v !== undefined)));
        if (!body.success) out.push(...zodProblems(body.error));
        let custom: CustomValues = {};
        if (body.success && out.length === 0) {
          try {
            custom = await mergedValues(defs, {}, body.data.custom_fields);
          } catch (e) {
            out.push(...appProblems(e));
          }
        }
        if (!body.success || out.length > 0) {
          outcomes.push({ line: p.line, problems: out });
          continue;
        }
        okSources.add(t.id);
        const used = new Set(Object.keys(custom));
        outcomes.push({
          line: p.line,
          source: t.id,
          body: body.data,
          owner: member(t.owner_id) ?? run.userId,
          custom,
          projectIds: body.data.project_ids ?? [],
          parent,
          archived: t.archived === true,
          fieldsSeen: defs.filter((d) => used.has(d.key)).map((d) => ({ id: d.id, stamp: d.stamp })),
        });
      }

      return {
        async write(r, tally) {
          const made = new Map<string, number>();
          let batch: Array<{ ready: Ready; item: NewTask }> = [];
          const flush = async () => {
            if (batch.length === 0) return;
            const rows = run.dryRun
              ? []
              : await r.tasks.create(
                  run.org,
                  batch.map((b) => b.item),
                );
            const numbers = batch.map((_b, i) => {
              const row = rows[i];
              if (!run.dryRun && !row) throw new Error(`the create statement returned ${rows.length} rows for ${batch.length} tasks`);
              return row ? Number(row.number) : null;
            });
            for (const [i, b] of batch.entries()) {
              const row = rows[i];
              if (row && b.ready.archived) {
                // Archived as the route archives: a version of its own and a task.archived event.
                const archived = await r.tasks.setArchived(run.org, Number(row.number), true);
                if (archived) await r.events.emit(run.org, run.userId, "task.archived", toTask(archived), changesOf(toTask(row), toTask(archived)));
                tally.touched.push(Number(row.number));
              }
              if (row) made.set(b.ready.source, Number(row.number));
            }
            await r.importMaps.putTasks(
              run.id,
              batch.map((b, i) => ({ source_id: b.ready.source, task_number: numbers[i] ?? null })),
            );
            tally.created += batch.length;
            batch = [];
          };
          for (const o of outcomes) {
            if ("problems" in o) {
              tally.fail(o.line, o.problems);
              continue;
            }
            const p = o.parent;
            // A parent of this chunk is created first: its number is the statement's to give.
            if (p !== null && "source" in p && batch.some((b) => b.ready.source === p.source)) await flush();
            const parentNumber = p === null ? null : "number" in p ? p.number : (made.get(p.source) ?? null);
            const content = createdContent(o.body, { projectIds: o.projectIds, parent: run.dryRun ? null : parentNumber, custom: o.custom }, deps.now());
            const item: NewTask = {
              owner: o.owner,
              actor: run.userId,
              by: run.stamp,
              content,
              versionId: newId("ver"),
              eventId: newId("evt"),
              credentialId: null,
              key: null,
              fieldsSeen: o.fieldsSeen,
            };
            batch.push({ ready: o, item });
          }
          await flush();
        },
      };
    },
  };
}

const given = (o: Record<string, unknown>) => Object.fromEntries(CONTENT.filter((k) => o[k] !== undefined && o[k] !== null).map((k) => [k, o[k]]));

/** What a dry run checks values against: the file's definition, with its options as the file names them. */
function dryDefinition(f: Ref, options: readonly Ref[]): StampedDefinition {
  return {
    id: f.target_id ?? `new:${f.source_id}`,
    key: f.name ?? "",
    type: (f.field_type ?? "text") as CustomFieldType,
    options: options.filter((o) => o.name === f.name).map((o) => ({ id: o.target_id ?? `new:${o.source_id}`, name: o.source_id, color: "" })),
    stamp: "",
  };
}
