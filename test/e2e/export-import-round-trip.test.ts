import { type ApiResponse, e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The round trip: an organization of a few thousand tasks with everything a task can carry is
// exported as JSONL, imported into an empty organization whose members have the same emails, and
// exported again: the two files hold the same content once ids and times are set aside.
const { gw, f } = e2eContext();

const TASKS = 2_000;
type Line = Record<string, unknown> & { object: string };
type Caller = Pick<Tenant, "apiKey">;

async function ok(p: Promise<ApiResponse>, status = 201) {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** Creates through the batch route, which may answer a prefix of its operations: the rest go again. */
async function createAll(t: Caller, bodies: Array<Record<string, unknown>>): Promise<string[]> {
  const ids: string[] = [];
  let rest = bodies;
  while (rest.length > 0) {
    const chunk = rest.slice(0, 100);
    const r = await ok(gw.post("/v1/tasks/batch", { operations: chunk.map((body) => ({ method: "create", body })) }, { token: t.apiKey }), 200);
    const results = r.results as Array<{ status: number; body: { id: string } }>;
    for (const x of results) {
      expect(x.status, JSON.stringify(x.body)).toBe(201);
      ids.push(x.body.id);
    }
    rest = rest.slice(results.length);
  }
  return ids;
}

async function waitForJob(t: Caller, path: string) {
  return eventually(
    async () => {
      const job = await ok(gw.get(path, { token: t.apiKey }), 200);
      if (job.status === "failed") throw new Error(`the job failed: ${JSON.stringify(job)}`);
      if (job.status !== "succeeded") throw new Error(`the job is ${job.status}: ${JSON.stringify(job.progress)}`);
      return job;
    },
    { what: `${path} to succeed`, timeoutMs: 180_000 },
  );
}

async function exportOf(t: Caller): Promise<{ text: string; lines: Line[] }> {
  const started = await ok(gw.post("/v1/exports", { format: "jsonl" }, { token: t.apiKey }), 202);
  const done = await waitForJob(t, `/v1/exports/${started.id}`);
  const file = await fetch(done.download_url as string);
  expect(file.status).toBe(200);
  const text = await file.text();
  return {
    text,
    lines: text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Line),
  };
}

async function importInto(t: Caller, text: string) {
  const size = Buffer.byteLength(text);
  const ticket = await ok(gw.post("/v1/imports/uploads", { file_name: "export.jsonl", content_type: "application/x-ndjson", size }, { token: t.apiKey }));
  const put = await fetch(ticket.upload_url as string, { method: "PUT", body: text, headers: { "content-type": "application/x-ndjson" } });
  expect(put.status, await put.clone().text()).toBeLessThan(300);
  const started = await ok(gw.post("/v1/imports", { file_key: ticket.file_key, format: "jsonl" }, { token: t.apiKey }), 202);
  return waitForJob(t, `/v1/imports/${started.id}`);
}

/** An organization with members, fields, labels, projects, tasks, subtasks, dependencies, history and comments. */
async function generate(t: Tenant) {
  // Thousands of calls in a minute: past the plan's burst window, which is not what is tested here.
  await f.admin("setLimits", { org: t.organizationId, burst: 100_000, quota: 10_000_000 });
  const members = [t.email];
  for (let i = 0; i < 3; i++) members.push((await f.user(t.organizationId)).email);
  const ids = new Map<string, string>();
  for (const m of await ok(gw.get("/v1/members?limit=100", { token: t.apiKey }), 200).then(
    (b) => b.data as Array<{ id?: string; user_id?: string; email: string }>,
  ))
    ids.set(m.email, (m.user_id ?? m.id) as string);
  const users = members.map((e) => ids.get(e) as string);
  const stage = await ok(
    gw.post(
      "/v1/custom-fields",
      { key: "stage", name: "Stage", type: "select", options: [{ name: "Idea" }, { name: "Doing" }, { name: "Done, really" }] },
      { token: t.apiKey },
    ),
  );
  await ok(gw.post("/v1/custom-fields", { key: "estimate", name: "Estimate", type: "number" }, { token: t.apiKey }));
  await ok(gw.post("/v1/custom-fields", { key: "reviewer", name: "Reviewer", type: "user" }, { token: t.apiKey }));
  const labels: string[] = [];
  for (const name of ["bug", "feature", 'needs "quotes", commas']) labels.push((await ok(gw.post("/v1/labels", { name }, { token: t.apiKey }))).id);
  const projects: string[] = [];
  for (const name of ["Launch", "Ünïcode & co"]) projects.push((await ok(gw.post("/v1/projects", { name }, { token: t.apiKey }))).id);
  const options = stage.options as Array<{ id: string }>;
  const body = (i: number): Record<string, unknown> => ({
    title: `Task ${i}: "quoted", with commas; and ü`,
    ...(i % 3 === 0 ? { description: `Line one of ${i}\nLine two, é à ü 漢字` } : {}),
    status: ["TODO", "IN_PROGRESS", "COMPLETED"][i % 3],
    priority: ["LOW", "MEDIUM", "HIGH"][i % 3],
    ...(i % 4 === 0 ? { due_date: `2031-0${(i % 9) + 1}-1${i % 10}` } : {}),
    ...(i % 5 === 0 ? { project_id: projects[i % 2] } : {}),
    ...(i % 2 === 0 ? { label_ids: labels.slice(0, (i % 3) + 1) } : {}),
    ...(i % 7 === 0 ? { assignee_ids: [users[i % users.length], users[(i + 1) % users.length]] } : {}),
    ...(i % 6 === 0 ? { custom_fields: { stage: options[i % 3]?.id, estimate: i / 2, reviewer: users[(i + 2) % users.length] } } : {}),
  });
  const roots = await createAll(
    t,
    Array.from({ length: TASKS * 0.9 }, (_, i) => body(i)),
  );
  const subtasks = await createAll(
    t,
    Array.from({ length: TASKS * 0.1 }, (_, i) => ({ ...body(TASKS + i), parent_task_id: roots[i * 3] })),
  );
  // A task moved under a parent made after it: the export must still put the parent first.
  const late = await ok(gw.post("/v1/tasks", { title: "Made last, parent of an older one" }, { token: t.apiKey }));
  await ok(gw.patch(`/v1/tasks/${roots[1]}`, { parent_task_id: late.id }, { token: t.apiKey }), 200);
  // A task in the trash is in no export.
  const trashed = await ok(gw.post("/v1/tasks", { title: "Thrown away" }, { token: t.apiKey }));
  await ok(gw.delete(`/v1/tasks/${trashed.id}`, { token: t.apiKey }), 200);
  // History and archived tasks.
  for (let i = 0; i < 40; i++) await ok(gw.patch(`/v1/tasks/${roots[i + 10]}`, { title: `Renamed ${i}`, priority: "LOW" }, { token: t.apiKey }), 200);
  for (let i = 0; i < 10; i++) await ok(gw.post(`/v1/tasks/${roots[i + 100]}/archive`, undefined, { token: t.apiKey }), 200);
  for (let i = 0; i < 60; i++) {
    await ok(gw.post(`/v1/tasks/${roots[i * 7 + 1]}/dependencies`, { blocker_task_id: roots[i * 7 + 2] }, { token: t.apiKey }));
  }
  for (let i = 0; i < 60; i++) {
    const who = users[i % users.length] as string;
    await ok(
      gw.post(`/v1/tasks/${subtasks[i % subtasks.length]}/comments`, { body: `Comment ${i}, for <@${who}>: "yes", no\nnext line` }, { token: t.apiKey }),
    );
  }
  return members;
}

/**
 * A line with its ids and times set aside: every reference becomes the name of what it refers to
 * (a task's title, a project's or label's name, a field's key, an option's name, a user's email).
 */
function canonical(lines: Line[]): string[] {
  const names = new Map<string, string>();
  for (const l of lines) {
    const id = l["id"] as string | undefined;
    if (l.object === "member") names.set(id as string, `user:${l["email"]}`);
    if (l.object === "task") names.set(id as string, `task:${l["title"]}`);
    if (l.object === "project" || l.object === "label") names.set(id as string, `${l.object}:${l["name"]}`);
    if (l.object === "custom_field") {
      names.set(id as string, `field:${l["key"]}`);
      for (const o of (l["options"] as Array<{ id: string; name: string }> | undefined) ?? []) names.set(o.id, `option:${o.name}`);
    }
  }
  const TIMES = new Set(["created_at", "updated_at", "completed_at", "archived_at", "edited_at", "version_created_at", "changed_at"]);
  const rename = (v: unknown, key?: string): unknown => {
    if (typeof v === "string") return names.get(v) ?? v.replace(/<@(usr_[A-Za-z0-9]+)>/g, (_, u: string) => `<@${names.get(u) ?? u}>`);
    if (Array.isArray(v)) return v.map((x) => rename(x));
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) if (!TIMES.has(k) && !(k === "id" && key !== "keep")) out[k] = rename(x, k);
      return out;
    }
    return v;
  };
  // History is not imported (content comes in as version 1): it is compared in the first export only.
  return lines
    .filter((l) => l.object !== "task_version")
    .map((l) => JSON.stringify({ ...(rename(l) as object), ref: names.get(l["id"] as string) ?? null, version: undefined }))
    .sort();
}

describe("export and import, the round trip", () => {
  it(`when an organization of ${TASKS} tasks is exported, imported into an empty organization with the same members' emails and exported again, then both exports hold the same content`, async () => {
    const a = await f.tenant();
    const emails = await generate(a);
    const first = await exportOf(a);
    const kinds = new Set(first.lines.map((l) => l.object));
    expect([...kinds].sort()).toEqual(["comment", "custom_field", "dependency", "label", "member", "project", "task", "task_version"]);
    expect(first.lines.filter((l) => l.object === "task")).toHaveLength(TASKS + 1);

    const b = await f.tenant();
    await f.admin("setLimits", { org: b.organizationId, burst: 100_000, quota: 10_000_000 });
    for (const email of emails.slice(1)) await f.admin("addUser", { org: b.organizationId, email, role: "member" });
    // The owner of the new organization has another email: map the first owner's to it by a member with that email.
    await f.admin("addUser", { org: b.organizationId, email: emails[0] as string, role: "admin" });
    const imported = await importInto(b, first.text);
    expect(imported.counts, JSON.stringify(imported.errors)).toEqual({ created: TASKS + 1, failed: 0 });
    const second = await exportOf(b);
    const without = (lines: Line[]) => lines.filter((l) => !(l.object === "member" && l["email"] === b.email));
    expect(canonical(without(second.lines))).toEqual(canonical(first.lines));
  }, 600_000);
});
