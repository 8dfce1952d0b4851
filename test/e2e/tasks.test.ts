import { createClient, unwrap, type Schemas } from "@tasksvc/client";
import { e2eContext, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

const { stack, gw, gw2, f, events, db } = e2eContext();

const create = (t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) => gw.post("/v1/tasks", body, { token: t.apiKey, headers });
/** A task made through the typed client (@tasksvc/client), as users make them; `create` is the raw request. */
async function created(t: Tenant, body: Schemas["CreateTaskRequest"]) {
  const api = createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });
  return unwrap(await api.POST("/v1/tasks", { body }));
}
const rowCount = async (table: string, orgId: string) =>
  Number((await db`select count(*)::int as n from ${db("tasks")}.${db(table)} where organization_id = ${orgId}`)[0]?.["n"]);
const fieldErrors = (r: { body: { errors?: { pointer: string }[] } }) => (r.body.errors ?? []).map((e) => e.pointer);

describe("POST /v1/tasks", () => {
  it("when created with a title only, then 201 with T-1, status TODO, nulls, and the defaults", async () => {
    const t = await f.tenant();
    const r = await create(t, { title: "  Write the spec  " });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("etag")).toBe('"1"');
    expect(r.body).toEqual({
      id: "T-1",
      version: 1,
      title: "Write the spec",
      description: null,
      status: "TODO",
      priority: null,
      start_date: null,
      due_date: null,
      notes: null,
      story_points: null,
      project_ids: [],
      owner_id: t.userId,
      assignee_ids: [],
      label_ids: [],
      custom_fields: {},
      parent_task_id: null,
      archived: false,
      recurrence: null,
      series_task_id: null,
      occurrence_date: null,
      created_at: expect.any(String),
      updated_at: r.body.created_at,
    });
    const owner = await db`select owner_user_id from tasks.tasks where organization_id = ${t.organizationId}`;
    expect(owner[0]?.["owner_user_id"]).toBe(t.userId);
  });

  it("when every field is given, then each is stored and shown (due_date as a UTC day)", async () => {
    const t = await f.tenant();
    const project = (await gw.post("/v1/projects", { name: "Launch" }, { token: t.apiKey })).body;
    const parent = await created(t, { title: "Parent" });
    const mark = await events.mark();
    const task = await created(t, {
      title: "Child",
      description: "d",
      status: "IN_PROGRESS",
      priority: "HIGH",
      start_date: "2026-11-20T09:30:00+01:00",
      due_date: "2026-12-01",
      notes: "n".repeat(100_000),
      story_points: 2.5,
      project_id: project.id,
      parent_task_id: parent.id.slice(2),
      recurrence: { frequency: "WEEKLY", by_weekday: [5, 1], timezone: "Europe/Berlin", end_date: "2027-06-30" },
    });
    expect(task).toMatchObject({
      id: "T-2",
      status: "IN_PROGRESS",
      priority: "HIGH",
      start_date: "2026-11-20T08:30:00.000Z",
      due_date: "2026-12-01T00:00:00.000Z",
      story_points: 2.5,
      project_ids: [project.id],
      parent_task_id: "T-1",
      recurrence: {
        frequency: "WEEKLY",
        interval: 1,
        by_weekday: [1, 5],
        by_month_day: null,
        basis: "SCHEDULE",
        timezone: "Europe/Berlin",
        start_date: null,
        end_date: "2027-06-30",
        max_occurrences: null,
        rollover_enabled: false,
        active: true,
        rrule: "FREQ=WEEKLY;INTERVAL=1;BYDAY=MO,FR;UNTIL=20270630",
      },
    });
    expect(task.notes).toHaveLength(100_000);
    expect((await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey })).body).toEqual(task);
    // The event carries exactly the API shape (it is rendered in SQL from the same template).
    expect((await events.await(mark, t.organizationId, 1)).map((e) => e.data)).toEqual([task]);
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ["a blank title", { title: "   " }, "/title"],
    ["a missing title", { description: "x" }, "/title"],
    ["a 501-character title", { title: "x".repeat(501) }, "/title"],
    ["a 10001-character description", { title: "t", description: "x".repeat(10_001) }, "/description"],
    ["100001 characters of notes", { title: "t", notes: "x".repeat(100_001) }, "/notes"],
    ["story_points above 1000", { title: "t", story_points: 1000.5 }, "/story_points"],
    ["negative story_points", { title: "t", story_points: -1 }, "/story_points"],
    ["an unknown status", { title: "t", status: "DONE" }, "/status"],
    ["an unknown priority", { title: "t", priority: "CRITICAL" }, "/priority"],
    ["an impossible due_date", { title: "t", due_date: "2026-02-30" }, "/due_date"],
    ["a due_date with a time but no offset", { title: "t", due_date: "2026-02-03T10:00:00" }, "/due_date"],
    ["a malformed start_date", { title: "t", start_date: "yesterday" }, "/start_date"],
    ["a malformed parent_task_id", { title: "t", parent_task_id: "X-1" }, "/parent_task_id"],
    ["an unknown field", { title: "t", owner: "me" }, "/owner"],
    ["a recurrence without frequency", { title: "t", recurrence: { interval: 2 } }, "/recurrence/frequency"],
    ["a recurrence weekday 8", { title: "t", recurrence: { frequency: "WEEKLY", by_weekday: [1, 8] } }, "/recurrence/by_weekday/1"],
    ["by_weekday on a DAILY rule", { title: "t", recurrence: { frequency: "DAILY", by_weekday: [1] } }, "/recurrence/by_weekday"],
    ["by_month_day 32", { title: "t", recurrence: { frequency: "MONTHLY", by_month_day: 32 } }, "/recurrence/by_month_day"],
    ["an unknown time zone", { title: "t", recurrence: { frequency: "DAILY", timezone: "Mars/Olympus" } }, "/recurrence/timezone"],
    [
      "end_date before start_date",
      { title: "t", recurrence: { frequency: "DAILY", start_date: "2026-05-02", end_date: "2026-05-01" } },
      "/recurrence/end_date",
    ],
    [
      "end_date and max_occurrences together",
      { title: "t", recurrence: { frequency: "DAILY", end_date: "2026-05-01", max_occurrences: 3 } },
      "/recurrence/max_occurrences",
    ],
    ["interval 0", { title: "t", recurrence: { frequency: "DAILY", interval: 0 } }, "/recurrence/interval"],
    ["an unknown recurrence field", { title: "t", recurrence: { frequency: "DAILY", every: 2 } }, "/recurrence/every"],
  ];
  for (const [what, body, pointer] of invalid) {
    it(`when the body has ${what}, then 400 validation_failed at ${pointer} and nothing is created`, async () => {
      const t = await f.tenant();
      const r = await create(t, body);
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      expect(fieldErrors(r)).toContain(pointer);
      expect(await rowCount("tasks", t.organizationId)).toBe(0);
    });
  }

  it("when project_id or parent_task_id is unknown or another organization's, then 400 naming it, and no number is used up", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const foreignProject = (await gw.post("/v1/projects", { name: "Theirs" }, { token: other.apiKey })).body;
    await created(other, { title: "their task" });
    for (const [body, pointer] of [
      [{ title: "t", project_id: "prj_unknown" }, "/project_id"],
      [{ title: "t", project_id: foreignProject.id }, "/project_id"],
      [{ title: "t", project_ids: ["prj_unknown"] }, "/project_ids/0"],
      [{ title: "t", parent_task_id: "T-1" }, "/parent_task_id"],
      [{ title: "t", parent_task_id: "0" }, "/parent_task_id"],
    ] as const) {
      const r = await create(t, body);
      expect(r.status, r.text).toBe(400);
      expect(fieldErrors(r)).toEqual([pointer]);
    }
    expect((await created(t, { title: "first" })).id).toBe("T-1");
  });

  it("when 30 tasks are created at once through two gateways, then they are numbered T-1..T-30 with no gap or duplicate", async () => {
    const t = await f.tenant("team");
    const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? gw : gw2).post("/v1/tasks", { title: `task ${i}` }, { token: t.apiKey })));
    expect(rs.map((r) => r.status)).toEqual(Array(30).fill(201));
    const ids = rs.map((r) => Number(r.body.id.slice(2))).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it("when two organizations create tasks, then each counts from T-1", async () => {
    const a = await f.tenant();
    const b = await f.tenant();
    expect((await created(a, { title: "a" })).id).toBe("T-1");
    expect((await created(b, { title: "b" })).id).toBe("T-1");
    expect((await created(a, { title: "a2" })).id).toBe("T-2");
  });

  it("when retried with the same Idempotency-Key, then one task exists and the replay is identical", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "create-once" };
    const [one, two] = await Promise.all([
      create(t, { title: "once" }, headers),
      // A stagger, not a wait for anything: the retry should arrive while the first still runs
      // (or just after); both outcomes are accepted below.
      new Promise((r) => setTimeout(r, 30)).then(() => create(t, { title: "once" }, headers)),
    ]);
    const statuses = [one.status, two.status].sort();
    // The second either replays the stored 201 or meets the first still running (409).
    expect([
      [201, 201],
      [201, 409],
    ]).toContainEqual(statuses);
    const again = await gw2.post("/v1/tasks", { title: "once" }, { token: t.apiKey, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(one.status === 201 ? one.body : two.body);
    expect(await rowCount("tasks", t.organizationId)).toBe(1);
  });

  it("when keyed creates of two organizations arrive at once, one with 100,000 characters of notes, then each retry replays its own first answer, the largest too", async () => {
    const [a, b] = [await f.tenant(), await f.tenant()];
    // Outcomes of one moment share a statement; one over 16 KiB is stored in a statement of its own.
    const bodies = [
      { t: a, body: { title: "large", notes: "n".repeat(100_000) }, key: "mixed-large" },
      ...[0, 1, 2, 3, 4].map((i) => ({ t: a, body: { title: `small ${i}` }, key: `mixed-small-${i}` })),
      ...[0, 1, 2, 3, 4].map((i) => ({ t: b, body: { title: `other ${i}` }, key: `mixed-other-${i}` })),
    ];
    const firsts = await Promise.all(bodies.map((x) => create(x.t, x.body, { "idempotency-key": x.key })));
    for (const r of firsts) expect(r.status, r.text).toBe(201);
    const replays = await Promise.all(bodies.map((x) => gw2.post("/v1/tasks", x.body, { token: x.t.apiKey, headers: { "idempotency-key": x.key } })));
    for (const [i, r] of replays.entries()) {
      expect(r.status, r.text).toBe(201);
      expect(r.headers.get("idempotency-replayed")).toBe("true");
      expect(r.body).toEqual(firsts[i]?.body);
    }
    expect(replays[0]?.body.notes).toHaveLength(100_000);
    expect(await rowCount("tasks", a.organizationId)).toBe(6);
    expect(await rowCount("tasks", b.organizationId)).toBe(5);
  });
});

describe("GET /v1/tasks/{task_id}", () => {
  it("when addressed as T-n or n, then the same task; another organization's, unknown or malformed ids are 404", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const task = await created(t, { title: "mine" });
    await created(other, { title: "theirs" });
    await created(other, { title: "theirs 2" });
    expect((await gw.get("/v1/tasks/1", { token: t.apiKey })).body).toEqual(task);
    expect((await gw.get("/v1/tasks/T-1", { token: t.apiKey })).body).toEqual(task);
    for (const id of ["T-2", "2", "T-0", "abc", "T-1234567890123"]) {
      const r = await gw.get(`/v1/tasks/${id}`, { token: t.apiKey });
      expect(r.status, id).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
  });
});

describe("reads after writes (task copies cached by each tasks replica)", () => {
  const readAll = async (t: Tenant, id: string) =>
    Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? gw : gw2).get(`/v1/tasks/${id}`, { token: t.apiKey })));

  it("when a task was read on every replica and is then changed, then every following read shows the change", async () => {
    const t = await f.tenant("team");
    const p = (await gw.post("/v1/projects", { name: "P" }, { token: t.apiKey })).body;
    const task = await created(t, { title: "before", project_id: p.id });
    for (let round = 0; round < 3; round++) {
      await readAll(t, task.id); // warm both replicas
      const title = `after ${round}`;
      expect((await gw.patch(`/v1/tasks/${task.id}`, { title }, { token: t.apiKey })).status).toBe(200);
      expect((await readAll(t, task.id)).map((r) => r.body.title)).toEqual(Array(16).fill(title));
    }
    await readAll(t, task.id);
    await gw2.post(`/v1/tasks/${task.id}/archive`, undefined, { token: t.apiKey });
    expect((await readAll(t, task.id)).every((r) => r.body.archived === true)).toBe(true);
    await gw.delete(`/v1/projects/${p.id}`, { token: t.apiKey });
    expect((await readAll(t, task.id)).every((r) => r.body.project_ids.length === 0)).toBe(true);
  });

  it("when reads race a stream of updates, then once the last update answered, no read shows an older title", async () => {
    const t = await f.tenant("team");
    const task = await created(t, { title: "v0" });
    let reading = true;
    const readers = Array.from({ length: 4 }, async () => {
      for (let n = 0; reading && n < 60; n++) expect((await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey })).status).toBe(200);
    });
    for (let i = 1; i <= 15; i++) await (i % 2 ? gw : gw2).patch(`/v1/tasks/${task.id}`, { title: `v${i}` }, { token: t.apiKey });
    reading = false;
    await Promise.all(readers);
    expect((await readAll(t, task.id)).map((r) => r.body.title)).toEqual(Array(16).fill("v15"));
  });
});

describe("PATCH /v1/tasks/{task_id} and history", () => {
  it("when content changes, then a new version is written and shown; a PATCH that changes nothing writes none", async () => {
    const t = await f.tenant();
    const task = await created(t, { title: "v1", priority: "LOW" });
    const r = await gw.patch(`/v1/tasks/${task.id}`, { title: "v2", priority: null, story_points: 3 }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ id: task.id, title: "v2", priority: null, story_points: 3, created_at: task.created_at });
    expect(Date.parse(r.body.updated_at)).toBeGreaterThan(Date.parse(task.updated_at));
    const same = await gw.patch(`/v1/tasks/${task.id}`, { title: " v2 ", priority: null }, { token: t.apiKey });
    expect(same.status).toBe(200);
    expect(same.body).toEqual(r.body);
    const empty = await gw.patch(`/v1/tasks/${task.id}`, {}, { token: t.apiKey });
    expect(empty.body).toEqual(r.body);
    const h = await gw.get(`/v1/tasks/${task.id}/history`, { token: t.apiKey });
    expect(h.status, h.text).toBe(200);
    expect(h.body.data.map((v: { title: string }) => v.title)).toEqual(["v2", "v1"]);
    expect(h.body.data[1]).toMatchObject({ priority: "LOW", story_points: null, created_at: task.created_at });
    expect(h.body.data[0].id).toMatch(/^ver_/);
    expect(h.body.data[0].id).not.toBe(h.body.data[1].id);
  });

  it("when a version is written, then the earlier versions never change", async () => {
    const t = await f.tenant();
    const task = await created(t, { title: "a", description: "first" });
    const before = (await gw.get(`/v1/tasks/${task.id}/history`, { token: t.apiKey })).body.data[0];
    await gw.patch(`/v1/tasks/${task.id}`, { description: "second" }, { token: t.apiKey });
    await gw.patch(`/v1/tasks/${task.id}`, { status: "COMPLETED" }, { token: t.apiKey });
    const h = (await gw.get(`/v1/tasks/${task.id}/history`, { token: t.apiKey })).body.data;
    expect(h).toHaveLength(3);
    expect(h[2]).toEqual(before);
    expect(h.map((v: { status: string; description: string }) => [v.status, v.description])).toEqual([
      ["COMPLETED", "second"],
      ["TODO", "second"],
      ["TODO", "first"],
    ]);
  });

  it("when history has more versions than a page, then pages follow newest first without repeats", async () => {
    const t = await f.tenant();
    const task = await created(t, { title: "0" });
    for (let i = 1; i <= 5; i++) await gw.patch(`/v1/tasks/${task.id}`, { title: String(i) }, { token: t.apiKey });
    const p1 = (await gw.get(`/v1/tasks/${task.id}/history?limit=4`, { token: t.apiKey })).body;
    expect(p1.has_more).toBe(true);
    const p2 = (await gw.get(`/v1/tasks/${task.id}/history?limit=4&after=${encodeURIComponent(p1.next_cursor)}`, { token: t.apiKey })).body;
    expect([...p1.data, ...p2.data].map((v: { title: string }) => v.title)).toEqual(["5", "4", "3", "2", "1", "0"]);
    expect(p2).toMatchObject({ has_more: false, next_cursor: null });
  });

  it("when a PATCH is retried with its Idempotency-Key, then it is replayed, not applied twice", async () => {
    const t = await f.tenant();
    const task = await created(t, { title: "a", story_points: 1 });
    const headers = { "idempotency-key": "patch-once" };
    const first = await gw.patch(`/v1/tasks/${task.id}`, { title: "b" }, { token: t.apiKey, headers });
    await gw.patch(`/v1/tasks/${task.id}`, { title: "c" }, { token: t.apiKey }); // a later change by someone else
    const again = await gw2.patch(`/v1/tasks/${task.id}`, { title: "b" }, { token: t.apiKey, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect((await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey })).body.title).toBe("c");
    expect(await rowCount("task_versions", t.organizationId)).toBe(3);
  });

  it("when the patch is invalid, then 400 naming the field and no version is written", async () => {
    const t = await f.tenant();
    const task = await created(t, { title: "a" });
    for (const [body, pointer] of [
      [{ title: "" }, "/title"],
      [{ status: null }, "/status"],
      [{ story_points: 5000 }, "/story_points"],
      [{ project_ids: ["prj_nope"] }, "/project_ids/0"],
      [{ parent_task_id: "T-1" }, "/parent_task_id"],
      [{ parent_task_id: "T-99" }, "/parent_task_id"],
      [{ recurrence: { frequency: "YEARLY", by_weekday: [1] } }, "/recurrence/by_weekday"],
    ] as const) {
      const r = await gw.patch(`/v1/tasks/${task.id}`, body, { token: t.apiKey });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(fieldErrors(r)).toContain(pointer);
    }
    expect(await rowCount("task_versions", t.organizationId)).toBe(1);
  });

  it("when a task would become its own ancestor, then 400 at /parent_task_id", async () => {
    const t = await f.tenant();
    const a = await created(t, { title: "a" });
    const b = await created(t, { title: "b", parent_task_id: a.id });
    const c = await created(t, { title: "c", parent_task_id: b.id });
    const r = await gw.patch(`/v1/tasks/${a.id}`, { parent_task_id: c.id }, { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(fieldErrors(r)).toEqual(["/parent_task_id"]);
    const moved = await gw.patch(`/v1/tasks/${c.id}`, { parent_task_id: null }, { token: t.apiKey });
    expect(moved.body.parent_task_id).toBeNull();
  });

  it("when another organization's task is patched or its history read, then 404", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const theirs = await created(other, { title: "theirs" });
    expect((await gw.patch(`/v1/tasks/${theirs.id}`, { title: "mine now" }, { token: t.apiKey })).status).toBe(404);
    expect((await gw.get(`/v1/tasks/${theirs.id}/history`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.get(`/v1/tasks/${theirs.id}`, { token: other.apiKey })).body.title).toBe("theirs");
  });
});

describe("archive and unarchive", () => {
  it("when archived, then the flag is set, no version is written, and it moves from the default list to archived=true", async () => {
    const t = await f.tenant();
    const task = await created(t, { title: "old" });
    const r = await gw.post(`/v1/tasks/${task.id}/archive`, undefined, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ archived: true, updated_at: task.updated_at });
    expect((await gw.get("/v1/tasks", { token: t.apiKey })).body.data).toEqual([]);
    expect((await gw.get("/v1/tasks?archived=true", { token: t.apiKey })).body.data.map((x: { id: string }) => x.id)).toEqual([task.id]);
    const back = await gw.post(`/v1/tasks/${task.id}/unarchive`, undefined, { token: t.apiKey });
    expect(back.body.archived).toBe(false);
    expect((await gw.get("/v1/tasks?archived=false", { token: t.apiKey })).body.data).toHaveLength(1);
    expect(await rowCount("task_versions", t.organizationId)).toBe(1);
  });
});

describe("GET /v1/tasks", () => {
  it("when listed, then most recently updated first, with status, project and parent filters on the current version", async () => {
    const t = await f.tenant();
    const p = (await gw.post("/v1/projects", { name: "P" }, { token: t.apiKey })).body;
    const a = await created(t, { title: "a" });
    const b = await created(t, { title: "b", project_id: p.id, status: "BLOCKED" });
    const c = await created(t, { title: "c", parent_task_id: a.id });
    await gw.patch(`/v1/tasks/${a.id}`, { title: "a2" }, { token: t.apiKey });
    const ids = async (q: string) => {
      const r = await gw.get(`/v1/tasks${q}`, { token: t.apiKey });
      expect(r.status, r.text).toBe(200);
      return r.body.data.map((x: { id: string }) => x.id);
    };
    expect(await ids("")).toEqual([a.id, c.id, b.id]);
    expect(await ids("?status=BLOCKED")).toEqual([b.id]);
    expect(await ids(`?project_id=${p.id}`)).toEqual([b.id]);
    expect(await ids(`?parent_task_id=${a.id}`)).toEqual([c.id]);
    expect(await ids(`?parent_task_id=${a.id.slice(2)}`)).toEqual([c.id]);
    await gw.patch(`/v1/tasks/${b.id}`, { status: "TODO", project_ids: [] }, { token: t.apiKey });
    expect(await ids("?status=BLOCKED")).toEqual([]);
    expect(await ids(`?project_id=${p.id}`)).toEqual([]);
  });

  it("when the parent or project filter names nothing in this organization, then 404; a bad value is 400", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    await created(other, { title: "theirs" });
    for (const q of ["?parent_task_id=T-1", "?parent_task_id=T-77", "?project_id=prj_nope"]) {
      const r = await gw.get(`/v1/tasks${q}`, { token: t.apiKey });
      expect(r.status, q).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    for (const [q, pointer] of [
      ["?status=DONE", "/status"],
      ["?archived=yes", "/archived"],
      ["?parent_task_id=x", "/parent_task_id"],
      ["?limit=101", "/limit"],
      ["?owner=me", "/owner"],
    ] as const) {
      const r = await gw.get(`/v1/tasks${q}`, { token: t.apiKey });
      expect(r.status, q).toBe(400);
      expect(fieldErrors(r)).toContain(pointer);
    }
  });

  it("when paged, then every task appears once even while tasks are updated between pages, and a cursor is bound to its filters", async () => {
    const t = await f.tenant();
    for (let i = 0; i < 7; i++) await created(t, { title: `t${i}` });
    const p1 = (await gw.get("/v1/tasks?limit=3", { token: t.apiKey })).body;
    expect(p1.data).toHaveLength(3);
    await created(t, { title: "newer" });
    const seen = [...p1.data];
    let cursor = p1.next_cursor;
    while (cursor) {
      const p = (await gw.get(`/v1/tasks?limit=3&after=${encodeURIComponent(cursor)}`, { token: t.apiKey })).body;
      seen.push(...p.data);
      cursor = p.next_cursor;
    }
    expect(seen.map((x: { id: string }) => x.id)).toEqual(["T-7", "T-6", "T-5", "T-4", "T-3", "T-2", "T-1"]);
    const rebound = await gw.get(`/v1/tasks?limit=3&status=TODO&after=${encodeURIComponent(p1.next_cursor)}`, { token: t.apiKey });
    expect(rebound.status).toBe(400);
    expect(fieldErrors(rebound)).toEqual(["/after"]);
  });

  it("when another organization has tasks, then they never appear", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    await created(other, { title: "theirs" });
    expect((await gw.get("/v1/tasks", { token: t.apiKey })).body.data).toEqual([]);
  });
});

describe("task events on JetStream", () => {
  it("when tasks change, then the stream holds exactly one event per change, in the task's API shape", async () => {
    const t = await f.tenant();
    const mark = await events.mark();
    const task = await created(t, { title: "e1" });
    const updated = (await gw.patch(`/v1/tasks/${task.id}`, { title: "e2" }, { token: t.apiKey })).body;
    await gw.patch(`/v1/tasks/${task.id}`, { title: "e2" }, { token: t.apiKey }); // no change, no event
    const archived = (await gw.post(`/v1/tasks/${task.id}/archive`, undefined, { token: t.apiKey })).body;
    await gw.post(`/v1/tasks/${task.id}/archive`, undefined, { token: t.apiKey }); // already archived
    const unarchived = (await gw.post(`/v1/tasks/${task.id}/unarchive`, undefined, { token: t.apiKey })).body;
    const failed = await create(t, { title: "" }); // refused: no event
    expect(failed.status).toBe(400);
    const got = await events.await(mark, t.organizationId, 4);
    expect(got.map((e) => [e.type, e.data])).toEqual([
      ["task.created", task],
      ["task.updated", updated],
      ["task.archived", archived],
      ["task.updated", unarchived],
    ]);
    expect(new Set(got.map((e) => e.id)).size).toBe(4);
    expect(got.every((e) => /^evt_/.test(e.id) && e.organization_id === t.organizationId)).toBe(true);
    expect(await rowCount("outbox", t.organizationId)).toBe(0);
  });
});
