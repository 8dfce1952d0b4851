import { createClient, unwrap } from "@tasksvc/client";
import { connectNats, decodeJson, type NatsConnection } from "@tasksvc/nats";
import { api, eventually, factories, must, gatewayUrl } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const gw2 = api(gatewayUrl(stack, 1));
const f = factories(stack);
const db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
let nc: NatsConnection;
let lookups: ReturnType<NatsConnection["subscribe"]>;
const lookupRequestIds: string[] = [];

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "boards-test" });
  // A plain subscriber sees a copy of every request the boards service sends to the tasks service.
  lookups = nc.subscribe(`${stack.namespace}.svc.tasks.lookupTasks`, {
    callback: (_err, msg) => {
      lookupRequestIds.push((decodeJson(msg.data) as { ctx: { request_id: string } }).ctx.request_id);
    },
  });
  await nc.flush();
});
afterAll(async () => {
  lookups.unsubscribe();
  await nc.drain();
  await f.close();
  await db.end({ timeout: 1 });
});

const DAY = "2026-11-23";
// Boards are read and tasks made through the typed client (@tasksvc/client); the tests about
// refusals and the wire use raw HTTP.
const client = (token: string) => createClient({ baseUrl: gatewayUrl(stack), token, retries: 0 });
const board = async (token: string, date = DAY) => unwrap(await client(token).GET("/v1/daily-plan", { params: { query: { date } } }));
const plan = (token: string, task_id: string, section = "TODO", date = DAY, headers: Record<string, string> = {}) =>
  gw.post("/v1/daily-plan/entries", { date, task_id, section }, { token, headers });
const task = async (token: string, body: { title: string; parent_task_id?: string; status?: "TODO" | "IN_PROGRESS" | "IN_REVIEW" | "COMPLETED" | "BLOCKED" }) =>
  unwrap(await client(token).POST("/v1/tasks", { body })).id;
const rows = async (table: string, orgId: string) =>
  Number((await db`select count(*)::int as n from ${db("boards")}.${db(table)} where organization_id = ${orgId}`)[0]?.["n"]);
const pointers = (r: { body: { errors?: { pointer: string }[] } }) => (r.body.errors ?? []).map((e) => e.pointer);
const entryIds = (b: { sections: { entries: { task_id: string }[] }[] }, i: number) => must(b.sections[i], `section ${i}`).entries.map((e) => e.task_id);

describe("GET /v1/daily-plan", () => {
  it("when nobody touched the date, then both sections read NOT_FILLED and empty, TODO first, and nothing is created", async () => {
    const t = await f.tenant();
    expect(await board(t.apiKey)).toEqual({
      date: DAY,
      sections: [
        { section: "TODO", status: "NOT_FILLED", entries: [] },
        { section: "PROGRESS", status: "NOT_FILLED", entries: [] },
      ],
    });
    expect(await rows("sections", t.organizationId)).toBe(0);
  });

  it("when the date is not a real YYYY-MM-DD day, then 400 at /date everywhere", async () => {
    const t = await f.tenant();
    for (const d of ["2026-02-30", "2026-13-01", "26-11-23", "2026-11-23T00:00:00Z", "tomorrow", ""]) {
      const r = await gw.get(`/v1/daily-plan?date=${encodeURIComponent(d)}`, { token: t.apiKey });
      expect(r.status, d).toBe(400);
      expect(pointers(r)).toEqual(["/date"]);
    }
    expect(pointers(await gw.get("/v1/daily-plan", { token: t.apiKey }))).toEqual(["/date"]);
    const patch = await gw.patch("/v1/daily-plan?date=2026-02-29", { section: "TODO", status: "PLANNED" }, { token: t.apiKey });
    expect(pointers(patch)).toEqual(["/date"]);
    const id = await task(t.apiKey, { title: "x" });
    expect(pointers(await plan(t.apiKey, id, "TODO", "2026-04-31"))).toEqual(["/date"]);
    expect(pointers(await plan(t.apiKey, id, "LATER"))).toEqual(["/section"]);
    expect(await rows("entries", t.organizationId)).toBe(0);
  });
});

describe("PATCH /v1/daily-plan", () => {
  it("when a section's status is set, then it is answered, stored, and shown; the other section stays NOT_FILLED", async () => {
    const t = await f.tenant();
    const r = await gw.patch(`/v1/daily-plan?date=${DAY}`, { section: "PROGRESS", status: "PLANNED" }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ date: DAY, section: "PROGRESS", status: "PLANNED" });
    const b = await board(t.apiKey);
    expect(b.sections.map((s: { status: string }) => s.status)).toEqual(["NOT_FILLED", "PLANNED"]);
    expect((await gw.patch(`/v1/daily-plan?date=${DAY}`, { section: "PROGRESS", status: "DONE" }, { token: t.apiKey })).status).toBe(400);
  });
});

describe("POST /v1/daily-plan/entries", () => {
  it("when a task is planned, then 201 with its current title and status, and the NOT_FILLED section becomes FILLING", async () => {
    const t = await f.tenant();
    const id = await task(t.apiKey, { title: "Write", status: "IN_PROGRESS" });
    const r = await plan(t.apiKey, id.slice(2));
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^ent_/),
      section: "TODO",
      task_id: id,
      title: "Write",
      status: "IN_PROGRESS",
      created_at: expect.any(String),
    });
    const b = await board(t.apiKey);
    expect(b.sections[0]).toEqual({ section: "TODO", status: "FILLING", entries: [r.body] });
    expect(b.sections[1].status).toBe("NOT_FILLED");
  });

  it("when the section already has a status other than NOT_FILLED, then placing an entry keeps it", async () => {
    const t = await f.tenant();
    await gw.patch(`/v1/daily-plan?date=${DAY}`, { section: "TODO", status: "PLANNED" }, { token: t.apiKey });
    await plan(t.apiKey, await task(t.apiKey, { title: "x" }));
    expect((await board(t.apiKey)).sections[0].status).toBe("PLANNED");
  });

  it("when the task is already on that section, then 400 at /task_id; on the other section, it moves with a new entry id", async () => {
    const t = await f.tenant();
    const id = await task(t.apiKey, { title: "x" });
    const first = (await plan(t.apiKey, id)).body;
    const again = await plan(t.apiKey, id);
    expect(again.status).toBe(400);
    expect(pointers(again)).toEqual(["/task_id"]);
    const moved = await plan(t.apiKey, id, "PROGRESS");
    expect(moved.status, moved.text).toBe(201);
    expect(moved.body.id).not.toBe(first.id);
    const b = await board(t.apiKey);
    expect([entryIds(b, 0), entryIds(b, 1)]).toEqual([[], [id]]);
    expect(b.sections[1].status).toBe("FILLING");
    expect((await gw.delete(`/v1/daily-plan/entries/${first.id}`, { token: t.apiKey })).status).toBe(404);
  });

  it("when the task is another user's or archived, then 400 at /task_id; another organization's or unknown, then 404", async () => {
    const t = await f.tenant();
    const colleague = await f.user(t.organizationId, "member");
    const other = await f.tenant();
    const theirs = await task(colleague.apiKey, { title: "colleague's" });
    const archived = await task(t.apiKey, { title: "old" });
    await gw.post(`/v1/tasks/${archived}/archive`, undefined, { token: t.apiKey });
    await task(other.apiKey, { title: "x" });
    await task(other.apiKey, { title: "y" });
    await task(other.apiKey, { title: "z" });
    for (const id of [theirs, archived]) {
      const r = await plan(t.apiKey, id);
      expect(r.status, id).toBe(400);
      expect(pointers(r)).toEqual(["/task_id"]);
    }
    for (const id of ["T-5", "T-999"]) {
      const r = await plan(t.apiKey, id);
      expect(r.status, id).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect(await rows("entries", t.organizationId)).toBe(0);
  });

  it("when a parent is planned, then its own unarchived subtasks come along; on the other section they move", async () => {
    const t = await f.tenant();
    const colleague = await f.user(t.organizationId, "member");
    const parent = await task(t.apiKey, { title: "parent" });
    const a = await task(t.apiKey, { title: "a", parent_task_id: parent });
    const b = await task(t.apiKey, { title: "b", parent_task_id: parent });
    const archived = await task(t.apiKey, { title: "archived", parent_task_id: parent });
    await gw.post(`/v1/tasks/${archived}/archive`, undefined, { token: t.apiKey });
    await task(colleague.apiKey, { title: "colleague's subtask", parent_task_id: parent });
    await plan(t.apiKey, b, "PROGRESS");
    const r = await plan(t.apiKey, parent);
    expect(r.status, r.text).toBe(201);
    const board1 = await board(t.apiKey);
    expect(entryIds(board1, 0)).toEqual([parent, a, b]);
    expect(entryIds(board1, 1)).toEqual([]);
  });

  it("when retried with the same Idempotency-Key, then the same entry is answered and nothing moves", async () => {
    const t = await f.tenant();
    const id = await task(t.apiKey, { title: "x" });
    const headers = { "idempotency-key": "plan-once" };
    const first = await plan(t.apiKey, id, "TODO", DAY, headers);
    const again = await gw2.post("/v1/daily-plan/entries", { date: DAY, task_id: id, section: "TODO" }, { token: t.apiKey, headers });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(await rows("entries", t.organizationId)).toBe(1);
  });
});

describe("the board over time and between users", () => {
  it("when planned tasks are renamed, completed or archived afterwards, then the board shows their current state", async () => {
    const t = await f.tenant();
    const a = await task(t.apiKey, { title: "draft" });
    const b = await task(t.apiKey, { title: "review" });
    const c = await task(t.apiKey, { title: "ship" });
    for (const id of [a, b, c]) await plan(t.apiKey, id);
    await gw.patch(`/v1/tasks/${a}`, { title: "draft v2" }, { token: t.apiKey });
    await gw2.patch(`/v1/tasks/${b}`, { status: "COMPLETED" }, { token: t.apiKey });
    await gw.post(`/v1/tasks/${c}/archive`, undefined, { token: t.apiKey });
    const entries = (await board(t.apiKey)).sections[0].entries;
    expect(entries.map((e: { task_id: string; title: string; status: string }) => [e.task_id, e.title, e.status])).toEqual([
      [a, "draft v2", "TODO"],
      [b, "review", "COMPLETED"],
    ]);
    await gw.post(`/v1/tasks/${c}/unarchive`, undefined, { token: t.apiKey });
    expect(entryIds(await board(t.apiKey), 0)).toEqual([a, b, c]);
  });

  it("when another user of the organization reads the same date or removes an entry, then they see only their own board", async () => {
    const t = await f.tenant();
    const colleague = await f.user(t.organizationId, "member");
    const entry = (await plan(t.apiKey, await task(t.apiKey, { title: "mine" }))).body;
    const theirs = await board(colleague.apiKey);
    expect(theirs.sections.map((s: { status: string; entries: unknown[] }) => [s.status, s.entries.length])).toEqual([
      ["NOT_FILLED", 0],
      ["NOT_FILLED", 0],
    ]);
    expect((await gw.delete(`/v1/daily-plan/entries/${entry.id}`, { token: colleague.apiKey })).status).toBe(404);
    const removed = await gw.delete(`/v1/daily-plan/entries/${entry.id}`, { token: t.apiKey });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ id: entry.id, deleted: true });
    expect(entryIds(await board(t.apiKey), 0)).toEqual([]);
  });

  it("when a board with 12 entries is read, then the boards service asks the tasks service exactly once", async () => {
    const t = await f.tenant();
    for (let i = 0; i < 12; i++) await plan(t.apiKey, await task(t.apiKey, { title: `t${i}` }), i % 2 ? "PROGRESS" : "TODO");
    const r = await gw.get(`/v1/daily-plan?date=${DAY}`, { token: t.apiKey });
    expect(r.status).toBe(200);
    expect(r.body.sections.map((s: { entries: unknown[] }) => s.entries.length)).toEqual([6, 6]);
    const empty = await gw.get("/v1/daily-plan?date=2030-01-01", { token: t.apiKey });
    expect(empty.status).toBe(200);
    const again = await gw.get(`/v1/daily-plan?date=${DAY}`, { token: t.apiKey });
    expect(again.body).toEqual(r.body);
    // A later read of a task not read before is the sentinel: the (one) boards replica sends its
    // lookups in order on one connection, and NATS keeps one publisher's order, so once the
    // sentinel's lookup is here every lookup of the reads above has arrived too. No sleep, no guess.
    await plan(t.apiKey, await task(t.apiKey, { title: "sentinel" }), "TODO", "2030-01-02");
    const sentinel = await gw.get("/v1/daily-plan?date=2030-01-02", { token: t.apiKey });
    const sentinelId = sentinel.headers.get("x-request-id");
    await eventually(() => expect(lookupRequestIds).toContain(sentinelId), { intervalMs: 10, what: "the sentinel's lookup" });
    expect(lookupRequestIds.filter((id) => id === r.headers.get("x-request-id"))).toHaveLength(1);
    expect(lookupRequestIds.filter((id) => id === empty.headers.get("x-request-id"))).toHaveLength(0);
    // The second read of the same tasks, unchanged since, is answered from the boards replica's copies.
    expect(lookupRequestIds.filter((id) => id === again.headers.get("x-request-id"))).toHaveLength(0);
  });

  it("when a board was read and its tasks then change through the other gateway, then the next read shows every change at once", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const ids = [];
    for (const title of ["draft", "review", "ship", "bin"]) ids.push(await task(t.apiKey, { title }));
    const [a, b, c, d] = ids;
    for (const id of ids) await plan(t.apiKey, id);
    // Another organization's tasks with the same numbers, read in between: its copies are its own.
    for (const title of ["theirs 1", "theirs 2"]) await plan(other.apiKey, await task(other.apiKey, { title }));
    const view = async (token: string) =>
      (await board(token)).sections[0].entries.map((e: { task_id: string; title: string; status: string }) => [e.task_id, e.title, e.status]);
    for (let round = 0; round < 3; round++) {
      expect(await view(t.apiKey)).toEqual([
        [a, round ? `draft ${round}` : "draft", "TODO"],
        [b, "review", round % 2 ? "COMPLETED" : "TODO"],
        [c, "ship", "TODO"],
        [d, "bin", "TODO"],
      ]);
      expect((await view(other.apiKey)).map((e: string[]) => e[1])).toEqual(["theirs 1", "theirs 2"]);
      await gw2.patch(`/v1/tasks/${a}`, { title: `draft ${round + 1}` }, { token: t.apiKey });
      await gw2.patch(`/v1/tasks/${b}`, { status: round % 2 ? "TODO" : "COMPLETED" }, { token: t.apiKey });
      if (round === 2) break;
      await gw2.post(`/v1/tasks/${c}/archive`, undefined, { token: t.apiKey });
      expect((await view(t.apiKey)).map((e: string[]) => e[0])).toEqual([a, b, d]);
      await gw2.post(`/v1/tasks/${c}/unarchive`, undefined, { token: t.apiKey });
    }
    expect(await view(t.apiKey)).toEqual([
      [a, "draft 3", "TODO"],
      [b, "review", "COMPLETED"],
      [c, "ship", "TODO"],
      [d, "bin", "TODO"],
    ]);
    const trashed = await gw2.delete(`/v1/tasks/${d}`, { token: t.apiKey });
    expect(trashed.status, trashed.text).toBe(200);
    expect((await view(t.apiKey)).map((e: string[]) => e[0])).toEqual([a, b, c]);
  });
});
