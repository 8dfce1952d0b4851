import { apiTask, e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { allTasks, importFile } from "./import-steps.js";

// JSONL imports through HTTP (DESIGN.md section 15): a file in the export's format, written here by
// hand, imported into an empty organization gives its content: projects, labels and custom fields
// by name or made, subtasks, dependencies, comments, people by email.
const { gw, f } = e2eContext();

const AT = "2026-01-05T10:00:00.000Z";
const task = (id: string, fields: Record<string, unknown>) => ({
  object: "task",
  ...apiTask(`Task ${id}`, { id, version: 3, owner_id: "usr_srcOwner", created_at: AT, updated_at: AT }),
  ...fields,
});

/** The source organization: a member who is also in the target, the target's owner, and someone who is in neither. */
function exportOf(target: { member: string; owner: string }): string {
  const lines = [
    { object: "member", id: "usr_srcA", email: target.member.toUpperCase(), name: "A" },
    { object: "member", id: "usr_srcOwner", email: target.owner, name: "Owner" },
    { object: "member", id: "usr_srcGone", email: "gone@example.test", name: "Gone" },
    {
      object: "custom_field",
      id: "fld_src_sev",
      key: "severity",
      name: "Severity",
      type: "select",
      options: [
        { id: "opt_src_high", name: "High", color: "#b60205" },
        { id: "opt_src_low", name: "Low", color: "#0e8a16" },
      ],
      description: "How bad.",
      created_at: AT,
      updated_at: AT,
    },
    {
      object: "custom_field",
      id: "fld_src_rev",
      key: "reviewer",
      name: "Reviewer",
      type: "user",
      options: [],
      description: null,
      created_at: AT,
      updated_at: AT,
    },
    {
      object: "custom_field",
      id: "fld_src_est",
      key: "estimate",
      name: "Estimate",
      type: "number",
      options: [],
      description: null,
      created_at: AT,
      updated_at: AT,
    },
    { object: "label", id: "lbl_src_bug", name: "bug", color: "#D73A4A", description: "Broken.", created_at: AT, updated_at: AT },
    { object: "label", id: "lbl_src_ui", name: "ui", color: "#0052cc", description: null, created_at: AT, updated_at: AT },
    { object: "project", id: "prj_src_launch", name: "Launch", description: "November.", created_at: AT, updated_at: AT },
    task("T-1", {
      title: "Launch the site",
      status: "IN_PROGRESS",
      priority: "HIGH",
      due_date: "2026-11-30T17:00:00.000Z",
      notes: "Ask legal.",
      story_points: 5,
      project_ids: ["prj_src_launch"],
      owner_id: "usr_srcA",
      assignee_ids: ["usr_srcA", "usr_srcGone"],
      label_ids: ["lbl_src_bug", "lbl_src_ui"],
      custom_fields: { severity: "opt_src_high", reviewer: "usr_srcA", estimate: 3 },
    }),
    task("T-7", { title: "Archived one", archived: true, owner_id: "usr_srcGone" }),
    task("T-2", { title: "Write copy", parent_task_id: "T-1", label_ids: ["lbl_src_ui"], custom_fields: { reviewer: "usr_srcGone" } }),
    task("T-3", { title: "Proofread", parent_task_id: "T-2", status: "COMPLETED" }),
    { object: "task_version", task_id: "T-1", id: "ver_src_1", version: 1, title: "Old title" },
    { object: "dependency", task_id: "T-3", blocker_task_id: "T-7" },
    { object: "dependency", task_id: "T-2", depends_on_id: "T-7" },
    {
      object: "comment",
      id: "cmt_src_1",
      task_id: "T-1",
      author_id: "usr_srcA",
      body: "Over to you <@usr_srcOwner>, cc <@usr_srcGone>.",
      mention_ids: ["usr_srcOwner", "usr_srcGone"],
      created_at: AT,
      updated_at: AT,
      edited_at: null,
    },
    {
      object: "comment",
      id: "cmt_src_2",
      task_id: "T-2",
      author_id: "usr_srcGone",
      body: "Done.",
      mention_ids: [],
      created_at: AT,
      updated_at: AT,
      edited_at: null,
    },
  ];
  return `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
}

async function get(t: Tenant, path: string) {
  const r = await gw.get(path, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body;
}

describe("JSONL imports", () => {
  it("when an export written by hand is imported into an empty organization, then it has that content: subtasks, dependencies, projects, labels, custom fields, assignees and comments", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId);
    const done = await importFile(gw, t, exportOf({ member: member.email, owner: t.email }), { format: "jsonl" });
    expect(done, JSON.stringify(done)).toMatchObject({ status: "succeeded", counts: { created: 4, failed: 0 }, errors: [] });

    const [project] = (await get(t, "/v1/projects")).data;
    expect(project).toMatchObject({ name: "Launch", description: "November." });
    const labels = (await get(t, "/v1/labels")).data;
    expect(labels.map((l: { name: string; color: string }) => [l.name, l.color])).toEqual([
      ["bug", "#d73a4a"],
      ["ui", "#0052cc"],
    ]);
    // Made in one transaction, they share a creation time: compared by key.
    const fields = (await get(t, "/v1/custom-fields")).data.sort((a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key));
    expect(fields.map((x: { key: string; type: string }) => [x.key, x.type])).toEqual([
      ["estimate", "number"],
      ["reviewer", "user"],
      ["severity", "select"],
    ]);
    expect(fields[2].options.map((o: { name: string; color: string }) => [o.name, o.color])).toEqual([
      ["High", "#b60205"],
      ["Low", "#0e8a16"],
    ]);
    const high = fields[2].options[0];

    const tasks = await allTasks(gw, t);
    const by = new Map(tasks.map((x) => [x.title, x]));
    expect(tasks).toHaveLength(4);
    const t1 = by.get("Launch the site");
    expect(t1).toMatchObject({
      version: 1,
      status: "IN_PROGRESS",
      priority: "HIGH",
      due_date: "2026-11-30T17:00:00.000Z",
      notes: "Ask legal.",
      story_points: 5,
      project_ids: [project.id],
      label_ids: labels.map((l: { id: string }) => l.id),
      // The member by email; someone who is not a member here is dropped.
      owner_id: member.userId,
      assignee_ids: [member.userId],
      custom_fields: { severity: high.id, reviewer: member.userId, estimate: 3 },
      parent_task_id: null,
    });
    const t2 = by.get("Write copy");
    expect(t2).toMatchObject({ parent_task_id: t1?.id, owner_id: t.userId, custom_fields: {}, label_ids: [labels[1].id] });
    expect(by.get("Proofread")).toMatchObject({ parent_task_id: t2?.id, status: "COMPLETED" });
    // An owner who is not a member here: the importing user.
    expect(by.get("Archived one")).toMatchObject({ archived: true, owner_id: t.userId });

    const deps = await get(t, `/v1/tasks/${by.get("Proofread")?.id}/dependencies`);
    expect(deps.blocked_by.map((d: { task_id: string }) => d.task_id)).toEqual([by.get("Archived one")?.id]);
    const deps2 = await get(t, `/v1/tasks/${t2?.id}/dependencies`);
    expect(deps2.blocked_by.map((d: { task_id: string }) => d.task_id)).toEqual([by.get("Archived one")?.id]);

    const [c1] = (await get(t, `/v1/tasks/${t1?.id}/comments`)).data;
    expect(c1).toMatchObject({ author_id: member.userId, body: `Over to you <@${t.userId}>, cc @gone@example.test.`, mention_ids: [t.userId] });
    const [c2] = (await get(t, `/v1/tasks/${t2?.id}/comments`)).data;
    expect(c2).toMatchObject({ author_id: t.userId, body: "Done.", mention_ids: [] });
  });

  it("when a label, project or field of that name or key already exists, then it is used, and a select field gains the options it lacks", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId);
    const as = { token: t.apiKey };
    const label = await gw.post("/v1/labels", { name: "BUG" }, as);
    const project = await gw.post("/v1/projects", { name: "Launch" }, as);
    const field = await gw.post("/v1/custom-fields", { key: "severity", name: "Sev", type: "select", options: [{ name: "high" }] }, as);
    for (const r of [label, project, field]) expect(r.status, r.text).toBe(201);
    const done = await importFile(gw, t, exportOf({ member: member.email, owner: t.email }), { format: "jsonl" });
    expect(done).toMatchObject({ status: "succeeded", counts: { created: 4, failed: 0 } });
    expect((await get(t, "/v1/labels")).data.map((l: { name: string }) => l.name)).toEqual(["BUG", "ui"]);
    expect((await get(t, "/v1/projects")).data.map((p: { id: string }) => p.id)).toEqual([project.body.id]);
    const sev = await get(t, `/v1/custom-fields/${field.body.id}`);
    expect(sev.options.map((o: { name: string }) => o.name)).toEqual(["high", "Low"]);
    const t1 = (await allTasks(gw, t)).find((x) => x.title === "Launch the site");
    expect(t1?.["custom_fields"]).toMatchObject({ severity: field.body.options[0].id });
    expect(t1?.["label_ids"]).toEqual([label.body.id, expect.any(String)]);
  });

  it("when lines are bad (not JSON, an unknown object, an unknown parent, a loop of dependencies, a field of another type), then each fails with its line and pointer and the rest is imported", async () => {
    const t = await f.tenant();
    const as = { token: t.apiKey };
    expect((await gw.post("/v1/custom-fields", { key: "estimate", name: "Est", type: "text" }, as)).status).toBe(201);
    const lines = [
      JSON.stringify({ object: "custom_field", id: "fld_x", key: "estimate", name: "Estimate", type: "number", options: [] }),
      "{not json",
      JSON.stringify({ object: "planet", id: "x" }),
      JSON.stringify(task("T-1", { title: "first" })),
      JSON.stringify(task("T-2", { title: "orphan", parent_task_id: "T-9" })),
      JSON.stringify(task("T-3", { title: "", status: "DONE" })),
      JSON.stringify(task("T-4", { title: "second" })),
      JSON.stringify(task("T-5", { title: "valued", custom_fields: { estimate: 3 } })),
      JSON.stringify(task("T-1", { title: "first again" })),
      JSON.stringify({ object: "dependency", task_id: "T-1", blocker_task_id: "T-4" }),
      JSON.stringify({ object: "dependency", task_id: "T-4", blocker_task_id: "T-1" }),
      JSON.stringify({ object: "dependency", task_id: "T-4", blocker_task_id: "T-2" }),
      JSON.stringify({ object: "comment", task_id: "T-4", body: "   " }),
    ];
    const done = await importFile(gw, t, lines.join("\n"), { format: "jsonl" });
    expect(done.status).toBe("succeeded");
    expect(done.errors.map((e: { line: number; pointer: string; code: string }) => [e.line, e.pointer, e.code])).toEqual([
      [1, "/type", "conflict"],
      [2, "", "invalid_json"],
      [3, "/object", "unknown_object"],
      [5, "/parent_task_id", "unknown_reference"],
      [6, "/title", "validation_failed"],
      [6, "/status", "validation_failed"],
      [8, "/custom_fields/estimate", "unknown_reference"],
      [9, "/id", "validation_failed"],
      [11, "", "dependency_cycle"],
      [12, "/blocker_task_id", "unknown_reference"],
      [13, "/body", "validation_failed"],
    ]);
    expect(done.counts).toEqual({ created: 2, failed: 10 });
    const [first, second] = (await allTasks(gw, t)).sort((a, b) => a.title.localeCompare(b.title));
    expect([first?.title, second?.title]).toEqual(["first", "second"]);
    const deps = await get(t, `/v1/tasks/${first?.id}/dependencies`);
    expect(deps.blocked_by.map((d: { task_id: string }) => d.task_id)).toEqual([second?.id]);
  });

  it("when the export is a dry run, then every line is checked and nothing is made: no task, project, label or custom field", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId);
    const done = await importFile(gw, t, exportOf({ member: member.email, owner: t.email }), { format: "jsonl", dryRun: true });
    expect(done).toMatchObject({ status: "succeeded", dry_run: true, counts: { created: 4, failed: 0 }, errors: [] });
    expect(await allTasks(gw, t)).toEqual([]);
    for (const path of ["/v1/projects", "/v1/labels", "/v1/custom-fields"]) expect((await get(t, path)).data, path).toEqual([]);
  });

  it("when a line is longer than the longest an import reads, or a task repeats a rule, then that line fails and the lines after it are read", async () => {
    const t = await f.tenant();
    const rule = { frequency: "WEEKLY", interval: 2, by_weekday: [1, 4], by_month_day: null, basis: "SCHEDULE", timezone: "Europe/Paris" };
    const recurrence = {
      ...rule,
      start_date: null,
      end_date: null,
      max_occurrences: null,
      rollover_enabled: false,
      active: true,
      rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH",
    };
    const lines = [
      JSON.stringify(task("T-1", { title: "x".repeat(400), notes: "n".repeat(1024 * 1024) })),
      JSON.stringify(task("T-2", { title: "repeats", due_date: "2026-11-30T09:00:00.000Z", recurrence })),
    ];
    const done = await importFile(gw, t, lines.join("\n"), { format: "jsonl" });
    expect(done).toMatchObject({ status: "succeeded", counts: { created: 1, failed: 1 } });
    expect(done.errors).toEqual([{ line: 1, pointer: "", code: "line_too_long", detail: expect.any(String) }]);
    const [made] = await allTasks(gw, t);
    expect(made).toMatchObject({ title: "repeats", due_date: "2026-11-30T09:00:00.000Z", recurrence });
  });
});
