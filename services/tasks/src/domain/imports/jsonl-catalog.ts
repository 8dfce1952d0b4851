import {
  CreateCustomFieldBody,
  CreateLabelBody,
  CreateProjectBody,
  type CustomFieldOption,
  DEFAULT_LABEL_COLOR,
  DEFAULT_OPTION_COLOR,
  Email,
  MAX_CUSTOM_FIELDS,
  OPTION_TYPES,
  OpaqueId,
} from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { z } from "zod";
import type { Ref } from "../../repo/import-maps-repo.js";
import type { Repositories } from "../../repo/repositories.js";
import { type JsonlDeps, type Line, type LineHandler, problem, type Problem, type Tally, zodProblems } from "./tally.js";

const Identified = z.looseObject({ id: OpaqueId });
const MemberLine = Identified.extend({ email: Email });
const FieldLine = Identified.extend({
  type: z.string(),
  options: z.array(z.looseObject({ id: OpaqueId, name: z.string(), color: z.string().optional() })).optional(),
});

const pick = (o: Record<string, unknown>, keys: readonly string[]) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
/** A null the create body leaves out (the export writes null where a create takes nothing). */
const given = (o: Record<string, unknown>, keys: readonly string[]) =>
  Object.fromEntries(keys.filter((k) => o[k] !== undefined && o[k] !== null).map((k) => [k, o[k]]));

/** Each line checked by `check`; a line that fails is told in order, with the others' work. */
function checked<T>(lines: readonly Line[], check: (obj: Record<string, unknown>) => { ok: T } | { problems: Problem[] }) {
  return lines.map((l) => ({ line: l.line, ...check(l.obj) }));
}

type Checked<T> = ReturnType<typeof checked<T>>[number];
const isOk = <T>(c: Checked<T>): c is Checked<T> & { ok: T } => "ok" in c;

function zodCheck<S extends z.ZodType>(schema: S, value: unknown): { ok: z.output<S> } | { problems: Problem[] } {
  const r = schema.safeParse(value);
  return r.success ? { ok: r.data } : { problems: zodProblems(r.error) };
}

const ref = (source_id: string, target_id: string | null, name: string | null = null, field_type: string | null = null): Ref => ({
  source_id,
  target_id,
  name,
  field_type,
});

export function catalogHandlers(deps: JsonlDeps): Record<"member" | "custom_field" | "label" | "project", LineHandler> {
  const { run } = deps;

  const member: LineHandler = {
    async prepare(lines) {
      const all = checked(lines, (o) => zodCheck(MemberLine, o));
      const members = await deps.members(
        run,
        all.filter(isOk).map((c) => c.ok.email),
      );
      return {
        async write(r, tally) {
          const refs: Ref[] = [];
          for (const c of all) {
            if (!isOk(c)) tally.fail(c.line, c.problems);
            // Someone who is not a member here keeps their email, for mentions; their other references are dropped.
            else refs.push(ref(c.ok.id, members.get(c.ok.email.toLowerCase()) ?? null, c.ok.email));
          }
          await r.importMaps.putRefs(run.id, "user", refs);
        },
      };
    },
  };

  async function writeField(r: Repositories, tally: Tally, line: number, f: z.output<typeof FieldLine>, body: CreateCustomFieldBody): Promise<void> {
    const org = run.org;
    const wanted = "options" in body ? body.options : [];
    const [existing] = await r.customFields.definitions(org, [body.key], true);
    let fieldId: string | null = null;
    let optionIds: Array<string | null>;
    if (existing) {
      if (existing.type !== body.type)
        return tally.fail(line, [problem("/type", "conflict", `the organization's field ${body.key} is of type ${existing.type}`)]);
      const byName = new Map(existing.options.map((o) => [o.name.toLowerCase(), o.id]));
      const added: CustomFieldOption[] = run.dryRun
        ? []
        : wanted
            .filter((o) => !byName.has(o.name.toLowerCase()))
            .map((o) => ({ id: newId("opt"), name: o.name, color: (o.color ?? DEFAULT_OPTION_COLOR).toLowerCase() }));
      if (existing.options.length + added.length > 100)
        return tally.fail(line, [problem("/options", "conflict", `the organization's field ${body.key} would have more than 100 options`)]);
      if (added.length > 0) await r.customFields.update(org, existing.id, { options: [...existing.options, ...added] });
      for (const o of added) byName.set(o.name.toLowerCase(), o.id);
      fieldId = existing.id;
      optionIds = wanted.map((o) => byName.get(o.name.toLowerCase()) ?? null);
    } else {
      // Counted under the organization's lock, as a create of the route does.
      if ((await r.customFields.lockOrganization(org)) >= MAX_CUSTOM_FIELDS && !run.dryRun)
        return tally.fail(line, [problem("", "conflict", `the organization already has ${MAX_CUSTOM_FIELDS} custom fields`)]);
      if (await r.customFields.keyBeingRemoved(org, body.key))
        return tally.fail(line, [problem("/key", "conflict", "belonged to a deleted custom field whose values are still being removed from tasks")]);
      const options = wanted.map((o) => ({ id: newId("opt"), name: o.name, color: (o.color ?? DEFAULT_OPTION_COLOR).toLowerCase() }));
      if (!run.dryRun) {
        const made = await r.customFields.insert(org, { key: body.key, name: body.name, type: body.type, options, description: body.description ?? null });
        fieldId = made.id;
      }
      optionIds = options.map((o) => (run.dryRun ? null : o.id));
    }
    await r.importMaps.putRefs(run.id, "field", [ref(f.id, fieldId, body.key, body.type)]);
    await r.importMaps.putRefs(
      run.id,
      "option",
      (f.options ?? []).map((o, i) => ref(o.id, optionIds[i] ?? null, body.key)),
    );
  }

  const customField: LineHandler = {
    async prepare(lines) {
      const all = checked(lines, (o) => {
        const line = zodCheck(FieldLine, o);
        if (!("ok" in line)) return line;
        const hasOptions = (OPTION_TYPES as readonly string[]).includes(line.ok.type);
        const options = (line.ok.options ?? []).map((x) => given(x, ["name", "color"]));
        const body = zodCheck(CreateCustomFieldBody, { ...given(o, ["type", "key", "name", "description"]), ...(hasOptions ? { options } : {}) });
        if (!("ok" in body)) return body;
        const seen = new Set<string>();
        for (const [i, opt] of ("options" in body.ok ? body.ok.options : []).entries()) {
          if (seen.has(opt.name.toLowerCase()))
            return { problems: [problem(`/options/${i}/name`, "validation_failed", "is the name of another option of this field")] };
          seen.add(opt.name.toLowerCase());
        }
        return { ok: { f: line.ok, body: body.ok } };
      });
      return {
        async write(r, tally) {
          for (const c of all) {
            if (!isOk(c)) tally.fail(c.line, c.problems);
            else await writeField(r, tally, c.line, c.ok.f, c.ok.body);
          }
        },
      };
    },
  };

  /** Labels and projects: matched by name, else made from the line (not in a dry run). */
  function named<B extends { name: string }>(
    check: (o: Record<string, unknown>) => { ok: B } | { problems: Problem[] },
    kind: "label" | "project",
    lookup: (r: Repositories, names: string[]) => Promise<Map<string, string>>,
    make: (r: Repositories, missing: B[]) => Promise<void>,
    keyOf: (name: string) => string,
  ): LineHandler {
    return {
      async prepare(lines) {
        const all = checked(lines, (o) => {
          const id = zodCheck(Identified, o);
          if (!("ok" in id)) return id;
          const body = check(o);
          return "ok" in body ? { ok: { id: id.ok.id, body: body.ok } } : body;
        });
        return {
          async write(r, tally) {
            const ok = all.filter(isOk).map((c) => c.ok);
            const names = ok.map((c) => c.body.name);
            let found = await lookup(r, names);
            const missing = new Map<string, B>();
            for (const c of ok) if (!found.has(keyOf(c.body.name)) && !missing.has(keyOf(c.body.name))) missing.set(keyOf(c.body.name), c.body);
            if (!run.dryRun && missing.size > 0) {
              await make(r, [...missing.values()]);
              found = await lookup(r, names);
            }
            for (const c of all) if (!isOk(c)) tally.fail(c.line, c.problems);
            await r.importMaps.putRefs(
              run.id,
              kind,
              ok.map((c) => ref(c.id, found.get(keyOf(c.body.name)) ?? null, c.body.name)),
            );
          },
        };
      },
    };
  }

  return {
    member,
    custom_field: customField,
    label: named(
      (o) => zodCheck(CreateLabelBody, pick(o, ["name", "color", "description"])),
      "label",
      (r, names) => r.importMaps.labelsNamed(run.org, names),
      (r, missing) =>
        r.importMaps.insertLabels(
          run.org,
          missing.map((l) => ({ name: l.name, color: (l.color ?? DEFAULT_LABEL_COLOR).toLowerCase(), description: l.description ?? null })),
        ),
      (name) => name.toLowerCase(),
    ),
    project: named(
      (o) => zodCheck(CreateProjectBody, given(o, ["name", "description"])),
      "project",
      (r, names) => r.importMaps.projectsNamed(run.org, names),
      (r, missing) =>
        r.importMaps.insertProjects(
          run.org,
          missing.map((p) => ({ name: p.name, description: p.description ?? null })),
        ),
      (name) => name,
    ),
  };
}
