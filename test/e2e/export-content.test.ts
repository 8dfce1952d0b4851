import { e2eContext, gatewayUrl, type Tenant } from "@tasksvc/testing";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { fetchLink, fileOf, finished, type Line, linesOf, startExport, withoutObject } from "./exports-helpers.js";

// What an export's file holds: every object once, as the API shows it, in the order an importer
// streams (members, definitions, tasks parents first, history, dependencies, comments); the parts
// asked for; CSV cells quoted so a real parser reads them back; one moment of the organization.
const { gw, f, stack } = e2eContext();
const gateway = () => gatewayUrl(stack);

type As = { token: string };
const made = async (path: string, body: unknown, as: As, status = 201) => {
  const r = await gw.post(path, body, as);
  expect(r.status, `${path}: ${r.text}`).toBe(status);
  return r.body;
};
const read = async (path: string, as: As) => {
  const r = await gw.get(path, as);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.body;
};
const exported = async (t: Tenant, body: Record<string, unknown>): Promise<Line[]> =>
  linesOf(await fileOf(gateway(), await finished(gw, t.apiKey, (await startExport(gw, t.apiKey, body)).id)));

const ORDER = ["member", "custom_field", "label", "project", "task", "task_version", "dependency", "comment"];

/** Two members (one who leaves), three kinds of field, two labels and projects, four tasks in two trees, history, a dependency, comments. */
async function smallOrganization() {
  const t = await f.tenant();
  const as = { token: t.apiKey };
  const member = await f.user(t.organizationId);
  const leaver = await f.user(t.organizationId);
  const customer = await made("/v1/custom-fields", { key: "customer", name: "Customer", type: "select", options: [{ name: "Acme" }, { name: "Globex" }] }, as);
  await made("/v1/custom-fields", { key: "reviewer", name: "Reviewer", type: "user" }, as);
  await made("/v1/custom-fields", { key: "summary", name: "Summary", type: "text" }, as);
  const bug = await made("/v1/labels", { name: "bug" }, as);
  await made("/v1/labels", { name: "ui" }, as);
  const launch = await made("/v1/projects", { name: "Launch" }, as);
  await made("/v1/projects", { name: "Ops" }, as);
  const first = await made(
    "/v1/tasks",
    {
      title: "first",
      project_ids: [launch.id],
      label_ids: [bug.id],
      assignee_ids: [member.userId],
      custom_fields: { customer: customer.options[0].id, reviewer: leaver.userId, summary: "short" },
    },
    as,
  );
  const second = await made("/v1/tasks", { title: "second", parent_task_id: first.id }, as);
  const third = await made("/v1/tasks", { title: "third" }, as);
  const fourth = await made("/v1/tasks", { title: "fourth", assignee_ids: [leaver.userId] }, as);
  // A task moved under a later-numbered parent: numbers alone would put it before its parent.
  for (const [id, patch] of [
    [first.id, { parent_task_id: third.id }],
    [third.id, { title: "third, renamed" }],
  ]) {
    const r = await gw.patch(`/v1/tasks/${id}`, patch, as);
    expect(r.status, r.text).toBe(200);
  }
  await made(`/v1/tasks/${fourth.id}/dependencies`, { blocker_task_id: second.id }, as);
  await made(`/v1/tasks/${third.id}/comments`, { body: `Look, <@${member.userId}>.` }, as);
  await made(`/v1/tasks/${second.id}/comments`, { body: "On it." }, { token: member.apiKey });
  expect((await gw.post(`/v1/tasks/${fourth.id}/archive`, undefined, as)).status).toBe(200);
  await f.admin("removeMember", { org: t.organizationId, user: leaver.userId });
  return { t, as, member, leaver, ids: { first: first.id, second: second.id, third: third.id, fourth: fourth.id } };
}

describe("export content", () => {
  it("when an organization is exported as JSONL, then every object comes once as its API shows it, members first, every parent before its subtasks", async () => {
    const { t, as, member, leaver, ids } = await smallOrganization();
    const lines = await exported(t, { format: "jsonl" });
    const ranks = lines.map((l) => ORDER.indexOf(l.object));
    expect(ranks.every((r) => r >= 0)).toBe(true);
    expect(ranks, "lines grouped in the format's order").toEqual([...ranks].sort((a, b) => a - b));
    const of = (object: string) => lines.filter((l) => l.object === object).map(withoutObject);

    // Everyone a line names, the member who left included, by the email the keys service knows.
    expect(of("member").sort((a, b) => String(a["id"]).localeCompare(String(b["id"])))).toEqual(
      [
        { id: t.userId, email: t.email, name: null },
        { id: member.userId, email: member.email, name: null },
        { id: leaver.userId, email: leaver.email, name: null },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(of("custom_field")).toEqual((await read("/v1/custom-fields?limit=100", as)).data);
    expect(of("label")).toEqual((await read("/v1/labels?limit=100", as)).data);
    const projects = of("project");
    expect(projects.map((p) => p["name"]).sort()).toEqual(["Launch", "Ops"]);
    for (const p of projects) expect(p).toEqual(await read(`/v1/projects/${p["id"]}`, as));

    // Depth first (T-3 and T-4 are top-level; T-1 is under T-3; T-2 under T-1), then number.
    const tasks = of("task");
    expect(tasks.map((x) => x["id"])).toEqual([ids.third, ids.fourth, ids.first, ids.second]);
    for (const task of tasks) expect(task).toEqual(await read(`/v1/tasks/${task["id"]}`, as));
    const seen = new Set<unknown>();
    for (const task of tasks) {
      if (task["parent_task_id"] !== null) expect(seen, `${task["id"]} after its parent`).toContain(task["parent_task_id"]);
      seen.add(task["id"]);
    }

    const versions = of("task_version");
    for (const id of Object.values(ids)) {
      const history = [...(await read(`/v1/tasks/${id}/history?limit=100`, as)).data].reverse();
      expect(versions.filter((v) => v["task_id"] === id).map(({ task_id: _t, ...v }) => v)).toEqual(history);
    }
    expect(versions.length).toBe(6);
    expect(of("dependency")).toEqual([{ task_id: ids.fourth, blocker_task_id: ids.second }]);
    const comments = [...(await read(`/v1/tasks/${ids.second}/comments`, as)).data, ...(await read(`/v1/tasks/${ids.third}/comments`, as)).data];
    expect(of("comment")).toEqual(comments);
  });

  it("when an export names the parts it wants, then its file holds those parts only, and members only for what it holds", async () => {
    const { t, ids } = await smallOrganization();
    const definitions = await exported(t, { format: "jsonl", include: ["projects", "labels"] });
    expect(definitions.map((l) => l.object)).toEqual(["label", "label", "project", "project"]);
    const tasks = await exported(t, { format: "jsonl", include: ["tasks"] });
    expect([...new Set(tasks.map((l) => l.object))]).toEqual(["member", "task", "dependency"]);
    expect(tasks.filter((l) => l.object === "task").map((l) => l["id"])).toEqual([ids.third, ids.fourth, ids.first, ids.second]);
    const talk = await exported(t, { format: "jsonl", include: ["comments"] });
    expect(talk.map((l) => l.object)).toEqual(["member", "member", "comment", "comment"]);
  });

  it("when tasks hold commas, quotes, line breaks and accented text, then a CSV parser reads every cell back as it was", async () => {
    const t = await f.tenant();
    const as = { token: t.apiKey };
    const member = await f.user(t.organizationId);
    const city = await made("/v1/custom-fields", { key: "city", name: "City", type: "select", options: [{ name: "Zürich" }, { name: "Köln, Süd" }] }, as);
    const tags = await made("/v1/custom-fields", { key: "tags", name: "Tags", type: "multi_select", options: [{ name: "a" }, { name: "b" }] }, as);
    await made("/v1/custom-fields", { key: "estimate", name: "Estimate", type: "number" }, as);
    const project = await made("/v1/projects", { name: 'Café "Crème", Paris' }, as);
    const l1 = await made("/v1/labels", { name: "needs, review" }, as);
    const l2 = await made("/v1/labels", { name: "naïve" }, as);
    const tricky = await made(
      "/v1/tasks",
      {
        title: 'Comma, and "quotes" — façade',
        description: 'line one\nline two, with a comma\r\nand "more"',
        notes: "ünïcödé ✓ 日本語",
        project_ids: [project.id],
        label_ids: [l1.id, l2.id],
        assignee_ids: [member.userId],
        priority: "HIGH",
        due_date: "2026-12-24",
        custom_fields: { city: city.options[1].id, tags: [tags.options[1].id, tags.options[0].id], estimate: 2.5 },
      },
      as,
    );
    const plain = await made("/v1/tasks", { title: "plain", parent_task_id: tricky.id }, as);
    const e = await finished(gw, t.apiKey, (await startExport(gw, t.apiKey, { format: "csv" })).id);
    const r = await fetchLink(gateway(), e.download_url ?? "");
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("content-disposition")).toContain(`filename="export-${e.id}.csv"`);
    const text = await r.text();
    expect(text.startsWith("id,title,description,status,priority,")).toBe(true);
    const rows = parse(text, { columns: true }) as Array<Record<string, string>>;
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual({
      id: tricky.id,
      title: 'Comma, and "quotes" — façade',
      description: 'line one\nline two, with a comma\r\nand "more"',
      status: "TODO",
      priority: "HIGH",
      start_date: "",
      due_date: tricky.due_date,
      story_points: "",
      project: 'Café "Crème", Paris',
      projects: 'Café "Crème", Paris',
      labels: "needs, review;naïve",
      assignee: member.email,
      assignees: member.email,
      owner: t.email,
      parent_task_id: "",
      archived: "false",
      notes: "ünïcödé ✓ 日本語",
      created_at: tricky.created_at,
      updated_at: tricky.updated_at,
      "custom.city": "Köln, Süd",
      "custom.tags": "b;a",
      "custom.estimate": "2.5",
    });
    expect(rows[1]).toMatchObject({ id: plain.id, title: "plain", parent_task_id: tricky.id, labels: "", assignee: "", "custom.city": "" });
  });

  it("when tasks change while an export runs, then the file shows one moment: each task's last version is the task as exported", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 1_000_000, quota: 2_000_000 });
    const as = { token: t.apiKey };
    const total = 2000;
    for (let i = 0; i < total; i += 100) {
      const ops = Array.from({ length: 100 }, (_, k) => ({ method: "create", body: { title: `task ${i + k + 1}`, notes: "n".repeat(500) } }));
      const r = await gw.post("/v1/tasks/batch", { operations: ops }, as);
      expect(r.status, r.text).toBe(200);
    }
    let running = true;
    let writes = 0;
    // Four writers renaming tasks at random until the export is done: each rename is a new version and the task row, in one commit.
    const writers = Array.from({ length: 4 }, async (_, w) => {
      while (running) {
        const n = 1 + Math.floor(Math.random() * total);
        const r = await gw.patch(`/v1/tasks/T-${n}`, { title: `renamed ${w}-${writes++}` }, as);
        expect(r.status, r.text).toBe(200);
      }
    });
    let lines: Line[] = [];
    try {
      const e = await finished(gw, t.apiKey, (await startExport(gw, t.apiKey, { format: "jsonl", include: ["tasks", "history"] })).id, 120_000);
      running = false;
      await Promise.all(writers);
      lines = linesOf(await fileOf(gateway(), e));
      expect(e.progress).toEqual({ done: total, total });
    } finally {
      running = false;
    }
    const tasks = lines.filter((l) => l.object === "task");
    expect(tasks).toHaveLength(total);
    const versionIds = lines.filter((l) => l.object === "task_version").map((l) => l["id"]);
    expect(new Set(versionIds).size, "each version once").toBe(versionIds.length);
    const lastVersion = new Map<unknown, Line>();
    for (const l of lines) if (l.object === "task_version") lastVersion.set(l["task_id"], l);
    const torn = tasks.filter((x) => lastVersion.get(x["id"])?.["version"] !== x["version"] || lastVersion.get(x["id"])?.["title"] !== x["title"]);
    expect(torn.map((x) => x["id"])).toEqual([]);
    // The writers went on after the snapshot was taken: some tasks are newer now than in the file.
    const now = new Map<unknown, unknown>();
    let after: string | null = null;
    do {
      const page: { data: Array<{ id: string; version: number }>; next_cursor: string | null } = await read(
        `/v1/tasks?limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`,
        as,
      );
      for (const x of page.data) now.set(x.id, x.version);
      after = page.next_cursor;
    } while (after);
    expect(writes).toBeGreaterThan(0);
    expect(tasks.filter((x) => now.get(x["id"]) !== x["version"]).length, "tasks renamed after the snapshot").toBeGreaterThan(0);
  }, 180_000);
});
