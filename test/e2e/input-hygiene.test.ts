import { e2eContext, type ApiResponse, type Tenant, bodyOf, pointersOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { ApiKey, page, Project, Task } from "@tasksvc/contracts";

// Issue 9, finding 4: input that Postgres cannot store (NUL, unpaired surrogates, year 0000) was
// answered 500. The contracts refuse it now (decision 0010): 400 validation_failed naming the
// field, and nothing stored. These cases must never reach a repository.

const { gw, f, db } = e2eContext();

const NUL = "\u0000";
function expectRefused(r: ApiResponse, pointer: string): void {
  expect(r.status, r.text).toBe(400);
  expect(r.headers.get("content-type"), r.text).toMatch(/^application\/problem\+json/);
  expect(r.headers.get("x-request-id"), r.text).toMatch(/^req_[0-9a-f]{32}$/);
  expect(r.body.code, r.text).toBe("validation_failed");
  expect(pointersOf(r.body), r.text).toContain(pointer);
}
const count = async (table: string, orgId: string) =>
  Number((await db`select count(*)::int as n from ${db("tasks")}.${db(table)} where organization_id = ${orgId}`)[0]?.["n"]);
const createTask = async (t: Tenant, body: Record<string, unknown>) => {
  const r = await gw.post("/v1/tasks", body, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, Task);
};
const createProject = async (t: Tenant, name: string) => {
  const r = await gw.post("/v1/projects", { name }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, Project);
};
const keyCount = async (t: Tenant) => bodyOf(await gw.get("/v1/api-keys?limit=100", { token: t.apiKey }), page(ApiKey)).data.length;

describe("a NUL character (U+0000) in a stored string", () => {
  it("when any text field of a new task holds NUL, then 400 naming that field and no task is stored", async () => {
    const t = await f.tenant();
    const project = await createProject(t, "Launch");
    const cases: Array<[string, Record<string, unknown>]> = [
      ["/title", { title: `a${NUL}b` }],
      ["/description", { title: "x", description: `a${NUL}b` }],
      ["/notes", { title: "x", notes: NUL }],
      ["/project_id", { title: "x", project_id: `${project.id}${NUL}` }],
      ["/project_ids/0", { title: "x", project_ids: [`${project.id}${NUL}`] }],
      ["/parent_task_id", { title: "x", parent_task_id: `T-1${NUL}` }],
      ["/recurrence/timezone", { title: "x", recurrence: { frequency: "DAILY", timezone: `UTC${NUL}` } }],
    ];
    for (const [pointer, body] of cases) expectRefused(await gw.post("/v1/tasks", body, { token: t.apiKey }), pointer);
    expect(await count("tasks", t.organizationId)).toBe(0);
  });

  it("when a PATCH of a task holds NUL in any text field, then 400 naming it and the task keeps its one version", async () => {
    const t = await f.tenant();
    const task = await createTask(t, { title: "Keep me", description: "d", notes: "n" });
    const cases: Array<[string, Record<string, unknown>]> = [
      ["/title", { title: `a${NUL}` }],
      ["/description", { description: `${NUL}` }],
      ["/notes", { notes: `n${NUL}n` }],
      ["/project_ids/0", { project_ids: [`prj_${NUL}`] }],
    ];
    for (const [pointer, body] of cases) expectRefused(await gw.patch(`/v1/tasks/${task.id}`, body, { token: t.apiKey }), pointer);
    const now = await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey });
    expect(now.body, now.text).toMatchObject({ title: "Keep me", description: "d", notes: "n", updated_at: task.updated_at });
    expect(await count("task_versions", t.organizationId)).toBe(1);
  });

  it("when a project's name or description holds NUL, on create or update, then 400 naming it and nothing changes", async () => {
    const t = await f.tenant();
    expectRefused(await gw.post("/v1/projects", { name: `P${NUL}` }, { token: t.apiKey }), "/name");
    expectRefused(await gw.post("/v1/projects", { name: "P", description: `d${NUL}` }, { token: t.apiKey }), "/description");
    expect(await count("projects", t.organizationId)).toBe(0);
    const p = await createProject(t, "Original");
    expectRefused(await gw.patch(`/v1/projects/${p.id}`, { name: `N${NUL}` }, { token: t.apiKey }), "/name");
    expectRefused(await gw.patch(`/v1/projects/${p.id}`, { description: `${NUL}` }, { token: t.apiKey }), "/description");
    const now = await gw.get(`/v1/projects/${p.id}`, { token: t.apiKey });
    expect(now.body, now.text).toMatchObject({ name: "Original", description: null, updated_at: p.updated_at });
  });

  it("when an API key's name holds NUL, then 400 at /name and no key is minted", async () => {
    const t = await f.tenant();
    const before = await keyCount(t);
    expectRefused(await gw.post("/v1/api-keys", { name: `ci${NUL}` }, { token: t.apiKey }), "/name");
    expect(await keyCount(t)).toBe(before);
  });

  it("when a dependency or a board entry names a task with NUL, then 400 naming the field and nothing is stored", async () => {
    const t = await f.tenant();
    const task = await createTask(t, { title: "x" });
    expectRefused(await gw.post(`/v1/tasks/${task.id}/dependencies`, { blocker_task_id: `T-2${NUL}` }, { token: t.apiKey }), "/blocker_task_id");
    expectRefused(
      await gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: `${task.id}${NUL}`, section: "TODO" }, { token: t.apiKey }),
      "/task_id",
    );
    expect(await count("dependencies", t.organizationId)).toBe(0);
    const entries = await db`select count(*)::int as n from boards.entries where organization_id = ${t.organizationId}`;
    expect(entries[0]?.["n"]).toBe(0);
  });

  it("when an administrative call names an organization or a user with NUL, then it is refused as validation_failed and nothing is created", async () => {
    const t = await f.tenant();
    const marker = `nul-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    // Refused by the contract (naming the field), not by the database after the fact.
    const refusedAt = (pointer: string) => ({ code: "validation_failed", errors: [expect.objectContaining({ pointer })] });
    await expect(f.admin("bootstrap", { org: `${marker}${NUL}`, plan: "free", email: f.email() })).rejects.toMatchObject(refusedAt("/org"));
    const orgs = await db`select count(*)::int as n from keys.organizations where name like ${marker + "%"}`;
    expect(orgs[0]?.["n"]).toBe(0);
    await expect(f.admin("addUser", { org: `${t.organizationId}${NUL}`, email: f.email(), role: "member" })).rejects.toMatchObject(refusedAt("/org"));
    await expect(f.admin("setRole", { org: t.organizationId, user: `${t.userId}${NUL}`, role: "admin" })).rejects.toMatchObject(refusedAt("/user"));
  });
});

describe("unpaired UTF-16 surrogates", () => {
  // JSON.stringify writes a lone surrogate as the escape \ud800, exactly what a hostile client sends.
  it("when task text holds a lone surrogate, then 400 naming the field and nothing is stored", async () => {
    const t = await f.tenant();
    expectRefused(await gw.post("/v1/tasks", { title: "\ud800" }, { token: t.apiKey }), "/title");
    expectRefused(await gw.post("/v1/tasks", { title: "x", description: "a\udc00b" }, { token: t.apiKey }), "/description");
    expectRefused(await gw.post("/v1/tasks", { title: "x", notes: "\udbff" }, { token: t.apiKey }), "/notes");
    expect(await count("tasks", t.organizationId)).toBe(0);
    const task = await createTask(t, { title: "x" });
    expectRefused(await gw.patch(`/v1/tasks/${task.id}`, { notes: "z\ud800" }, { token: t.apiKey }), "/notes");
    expect(await count("task_versions", t.organizationId)).toBe(1);
  });

  it("when a project or API-key name holds a lone surrogate, then 400 naming it", async () => {
    const t = await f.tenant();
    expectRefused(await gw.post("/v1/projects", { name: "\udfff" }, { token: t.apiKey }), "/name");
    expectRefused(await gw.post("/v1/api-keys", { name: "k\ud800" }, { token: t.apiKey }), "/name");
    expect(await count("projects", t.organizationId)).toBe(0);
  });

  it("when text holds a proper surrogate pair (an emoji), then it is stored and read back unchanged", async () => {
    const t = await f.tenant();
    const title = "Ship it \u{1F680}";
    const task = await createTask(t, { title, description: "\u{1F600} done" });
    const r = await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey });
    expect(r.body, r.text).toMatchObject({ title, description: "\u{1F600} done" });
  });
});

describe("control characters", () => {
  it("when a single-line name (title, project name, key name) holds a line break, tab or other control character, then 400 naming it", async () => {
    const t = await f.tenant();
    expectRefused(await gw.post("/v1/tasks", { title: "two\nlines" }, { token: t.apiKey }), "/title");
    expectRefused(await gw.post("/v1/projects", { name: "a\tb" }, { token: t.apiKey }), "/name");
    expectRefused(await gw.post("/v1/api-keys", { name: "bell\u0007" }, { token: t.apiKey }), "/name");
    expectRefused(await gw.post("/v1/api-keys", { name: "c1\u0085" }, { token: t.apiKey }), "/name");
    expect(await count("tasks", t.organizationId)).toBe(0);
  });

  it("when a title or project name has whitespace around it (spaces, tabs, line breaks), then it is trimmed first and stored without it", async () => {
    const t = await f.tenant();
    const task = await createTask(t, { title: "   core\t  " });
    expect(task.title).toBe("core");
    const patched = await gw.patch(`/v1/tasks/${task.id}`, { title: "\r\n  renamed \n" }, { token: t.apiKey });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.title, patched.text).toBe("renamed");
    const project = await createProject(t, "\t Launch \n");
    expect(project.name).toBe("Launch");
    // Trimmed names are what uniqueness compares.
    expectRefused(await gw.post("/v1/projects", { name: " Launch\t" }, { token: t.apiKey }), "/name");
    const renamed = await gw.patch(`/v1/projects/${project.id}`, { name: "  Launch 2\t" }, { token: t.apiKey });
    expect(renamed.body.name, renamed.text).toBe("Launch 2");
    // Inside the value, a line break is still refused, and whitespace alone is empty.
    expectRefused(await gw.post("/v1/tasks", { title: " two\nlines " }, { token: t.apiKey }), "/title");
    expectRefused(await gw.post("/v1/tasks", { title: " \t\n " }, { token: t.apiKey }), "/title");
  });

  it("when free text (description, notes) holds line breaks, tabs or other controls but no NUL, then it is stored unchanged", async () => {
    const t = await f.tenant();
    const description = "line 1\r\nline 2\tend\u001b[0m";
    const task = await createTask(t, { title: "x", description, notes: "a\fb" });
    const r = await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey });
    expect(r.body, r.text).toMatchObject({ description, notes: "a\fb" });
  });
});

describe("dates outside 1000-01-01 .. 9999-12-31", () => {
  it("when due_date or start_date is in year 0000 or before year 1000, then 400 naming it and no task is stored", async () => {
    const t = await f.tenant();
    const cases: Array<[string, Record<string, unknown>]> = [
      ["/due_date", { due_date: "0000-01-01" }],
      ["/due_date", { due_date: "0999-12-31" }],
      ["/start_date", { start_date: "0000-01-01" }],
      ["/start_date", { start_date: "0000-01-01T00:00:00Z" }],
      ["/start_date", { start_date: "0999-12-31T23:59:59.999Z" }],
      // 9999-12-31 23:00 at UTC-05:00 is an instant of year 10000: not representable as an ISO timestamp.
      ["/start_date", { start_date: "9999-12-31T23:00:00-05:00" }],
      ["/recurrence/start_date", { recurrence: { frequency: "DAILY", start_date: "0000-01-01" } }],
      ["/recurrence/end_date", { recurrence: { frequency: "DAILY", end_date: "0000-01-01" } }],
    ];
    for (const [pointer, extra] of cases) expectRefused(await gw.post("/v1/tasks", { title: "x", ...extra }, { token: t.apiKey }), pointer);
    expect(await count("tasks", t.organizationId)).toBe(0);
    const task = await createTask(t, { title: "x" });
    expectRefused(await gw.patch(`/v1/tasks/${task.id}`, { due_date: "0000-02-29" }, { token: t.apiKey }), "/due_date");
    expectRefused(await gw.patch(`/v1/tasks/${task.id}`, { start_date: "0000-01-01T00:00:00+01:00" }, { token: t.apiKey }), "/start_date");
    expect(await count("task_versions", t.organizationId)).toBe(1);
  });

  it("when dates sit on the edges of the range, then they are stored and read back exactly", async () => {
    const t = await f.tenant();
    const low = await createTask(t, { title: "low", due_date: "1000-01-01", start_date: "0999-12-31T23:00:00-01:00" });
    expect(low, JSON.stringify(low)).toMatchObject({ due_date: "1000-01-01T00:00:00.000Z", start_date: "1000-01-01T00:00:00.000Z" });
    const high = await createTask(t, { title: "high", due_date: "9999-12-31", start_date: "9999-12-31T23:59:59.999Z" });
    expect(high, JSON.stringify(high)).toMatchObject({ due_date: "9999-12-31T00:00:00.000Z", start_date: "9999-12-31T23:59:59.999Z" });
    const r = await gw.get(`/v1/tasks/${high.id}`, { token: t.apiKey });
    expect(r.body, r.text).toMatchObject({ due_date: "9999-12-31T00:00:00.000Z", start_date: "9999-12-31T23:59:59.999Z" });
  });

  it("when a daily-plan date is year 0000, in the query or in an entry, then 400 at /date and nothing is stored", async () => {
    const t = await f.tenant();
    const task = await createTask(t, { title: "x" });
    expectRefused(await gw.get("/v1/daily-plan?date=0000-01-01", { token: t.apiKey }), "/date");
    expectRefused(await gw.patch("/v1/daily-plan?date=0000-01-01", { section: "TODO", status: "PLANNED" }, { token: t.apiKey }), "/date");
    expectRefused(await gw.post("/v1/daily-plan/entries", { date: "0000-01-01", task_id: task.id, section: "TODO" }, { token: t.apiKey }), "/date");
    const rows =
      await db`select (select count(*)::int from boards.entries where organization_id = ${t.organizationId}) + (select count(*)::int from boards.sections where organization_id = ${t.organizationId}) as n`;
    expect(rows[0]?.["n"]).toBe(0);
  });
});

describe("%00 and control characters in path ids and query values", () => {
  it("when a path id holds %00, then 400 naming the parameter on every route that takes one (never 500)", async () => {
    const t = await f.tenant();
    const cases: Array<[string, string, string]> = [
      ["GET", "/v1/organizations/org_x%00", "/organization_id"],
      ["DELETE", "/v1/api-keys/key_x%00", "/key_id"],
      ["GET", "/v1/tasks/T-1%00", "/task_id"],
      ["GET", "/v1/tasks/T-1%00/history", "/task_id"],
      ["DELETE", "/v1/tasks/T-1/dependencies/T-2%00", "/blocker_task_id"],
      ["GET", "/v1/projects/prj_x%00", "/project_id"],
      ["DELETE", "/v1/projects/%00", "/project_id"],
      ["DELETE", "/v1/daily-plan/entries/ent_x%00", "/entry_id"],
    ];
    for (const [method, path, pointer] of cases) expectRefused(await gw.request(method, path, { token: t.apiKey }), pointer);
    expectRefused(await gw.patch("/v1/projects/prj_x%00", { name: "n" }, { token: t.apiKey }), "/project_id");
  });

  it("when a path id holds a line break (%0A), then 400 naming it, and the services behind keep answering", async () => {
    const t = await f.tenant();
    expectRefused(await gw.get("/v1/organizations/a%0Ab", { token: t.apiKey }), "/organization_id");
    expectRefused(await gw.delete("/v1/api-keys/a%0Db", { token: t.apiKey }), "/key_id");
    expectRefused(await gw.get("/v1/projects/a%0Ab", { token: t.apiKey }), "/project_id");
    const ok = await gw.get(`/v1/organizations/${t.organizationId}`, { token: t.apiKey });
    expect(ok.status, ok.text).toBe(200);
  });

  it("when a query value holds %00, then 400 naming the parameter (never 500)", async () => {
    const t = await f.tenant();
    expectRefused(await gw.get("/v1/tasks?project_id=prj_x%00", { token: t.apiKey }), "/project_id");
    expectRefused(await gw.get("/v1/tasks?parent_task_id=T-1%00", { token: t.apiKey }), "/parent_task_id");
    expectRefused(await gw.get("/v1/tasks?after=%00", { token: t.apiKey }), "/after");
    expectRefused(await gw.get("/v1/members?after=abc%00.def", { token: t.apiKey }), "/after");
    expectRefused(await gw.get("/v1/daily-plan?date=2026-01-01%00", { token: t.apiKey }), "/date");
  });

  it("when the Idempotency-Key holds a byte outside visible ASCII, then 400 at /Idempotency-Key and nothing is created", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/tasks", { title: "x" }, { token: t.apiKey, headers: { "idempotency-key": "caf\u00e9" } });
    expectRefused(r, "/Idempotency-Key");
    expect(await count("tasks", t.organizationId)).toBe(0);
  });
});
