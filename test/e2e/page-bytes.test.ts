import { e2eContext, eventually, openSse, type ApiResponse, type Tenant, bodyOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { Project, Task } from "@tasksvc/contracts";

// DESIGN 20, Size: no reply between services may exceed NATS's max_payload (1 MiB here). Pages
// stop at a byte budget and answer has_more with the cursor after the last item sent, so a page
// of large items holds fewer than `limit`; the live stream's replay pages by bytes too.
const { gw, f, db, stack } = e2eContext();

/** Notes at the longest a test body fits: U+0001 is six bytes in JSON (`\u0001`), so 594,000 bytes a task. */
const LONG_NOTES = "\u0001".repeat(99_000);
/** Ordinary text, 2,500 characters. */
const DESCRIPTION = "The quick brown fox jumps over the lazy dog, then files its report. ".repeat(40).slice(0, 2_500);

const auth = (t: Tenant) => ({ token: t.apiKey });
/** A response, short enough for a failure message (a page of these tasks is megabytes). */
const say = (r: ApiResponse) => `${r.status} ${r.text.slice(0, 300)}`;

/** `n` tasks with LONG_NOTES, titled `big <i>`; their ids. */
async function bigTasks(t: Tenant, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await gw.post("/v1/tasks", { title: `big ${i}`, notes: LONG_NOTES }, auth(t));
    expect(r.status, say(r)).toBe(201);
    ids.push(bodyOf(r, Task).id);
  }
  return ids;
}

interface Page {
  data: Array<Record<string, unknown>>;
  has_more: boolean;
  next_cursor: string | null;
}

/** Every page of a list, from the first, following next_cursor; each answer must be a 200. */
async function allPages(read: (after: string | undefined) => Promise<ApiResponse>): Promise<Page[]> {
  const pages: Page[] = [];
  let after: string | undefined;
  for (;;) {
    const r = await read(after);
    expect(r.status, say(r)).toBe(200);
    const page = r.body as Page;
    pages.push(page);
    if (!page.has_more) return pages;
    expect(page.next_cursor, say(r)).toEqual(expect.any(String));
    after = page.next_cursor ?? undefined;
    // A list of 12 large items takes a dozen pages at most: more is a loop.
    expect(pages.length).toBeLessThanOrEqual(30);
  }
}

/** The first page is short of the limit and says more follow; every item comes once over all pages. */
function expectShortPages(pages: Page[], limit: number, key: (item: Record<string, unknown>) => unknown, expected: unknown[]) {
  const [first] = pages;
  expect(first?.has_more).toBe(true);
  expect(first?.data.length).toBeGreaterThan(0);
  expect(first?.data.length).toBeLessThan(limit);
  const got = pages.flatMap((p) => p.data.map(key));
  expect(new Set(got).size, JSON.stringify(got)).toBe(got.length);
  expect([...got].sort()).toEqual([...expected].sort());
}

const query = (after: string | undefined, rest = "") => `?${rest}${after === undefined ? "" : `${rest ? "&" : ""}after=${encodeURIComponent(after)}`}`;

describe("pages over the message size", () => {
  it("when 12 tasks have 594 kB notes each, then the default list answers 200 with fewer than 25 and has_more, and the cursors give every task once", async () => {
    const t = await f.tenant();
    const ids = await bigTasks(t, 12);
    const pages = await allPages((after) => gw.get(`/v1/tasks${query(after)}`, auth(t)));
    expectShortPages(pages, 25, (task) => task.id, ids);
    expect(pages.flatMap((p) => p.data).every((task) => task.notes === LONG_NOTES)).toBe(true);
  }, 120_000);

  it("when a search matches 12 tasks with 594 kB notes each, then it answers 200 with fewer than the limit and has_more, and the cursors give every task once", async () => {
    const t = await f.tenant();
    const ids = await bigTasks(t, 12);
    const body = { filter: { field: "title", op: "contains", value: "big" }, sort: "created_at", limit: 50 };
    const pages = await allPages((after) => gw.post("/v1/tasks/search", after === undefined ? body : { ...body, after }, auth(t)));
    expectShortPages(pages, 50, (task) => task.id, ids);
  }, 120_000);

  it("when 12 events carry 594 kB tasks each, then the events feed answers 200 with fewer than 25 and has_more, and the cursors give every event once", async () => {
    const t = await f.tenant();
    const ids = await bigTasks(t, 12);
    const pages = await allPages((after) => gw.get(`/v1/events${query(after)}`, auth(t)));
    expectShortPages(pages, 25, (e) => (e.data as { id: string }).id, ids);
    const events = pages.flatMap((p) => p.data.map((e) => e.id));
    expect(new Set(events).size).toBe(12);
  }, 120_000);

  it("when a task with 594 kB notes has 12 versions, then its history answers 200 with fewer than 25 and has_more, and the cursors give every version once", async () => {
    const t = await f.tenant();
    const [id] = await bigTasks(t, 1);
    for (let v = 2; v <= 12; v++) {
      const r = await gw.patch(`/v1/tasks/${id}`, { title: `big, version ${v}` }, auth(t));
      expect(r.status, say(r)).toBe(200);
    }
    const pages = await allPages((after) => gw.get(`/v1/tasks/${id}/history${query(after)}`, auth(t)));
    expectShortPages(
      pages,
      25,
      (v) => v.version,
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
    expect(pages.flatMap((p) => p.data.map((v) => v.version))).toEqual(Array.from({ length: 12 }, (_, i) => 12 - i));
  }, 120_000);
});

describe("projects over the message size", () => {
  it("when 100 projects have 2,000-character descriptions of control characters (12 kB each in JSON), then a page of 100 answers 200 with fewer and has_more, and the cursors give every project once", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 100_000 });
    const ids: string[] = [];
    for (let i = 0; i < 100; i += 10) {
      const made = await Promise.all(
        Array.from({ length: 10 }, (_, k) => gw.post("/v1/projects", { name: `project ${i + k}`, description: "\u0001".repeat(2_000) }, auth(t))),
      );
      for (const r of made) {
        expect(r.status, say(r)).toBe(201);
        ids.push(bodyOf(r, Project).id);
      }
    }
    const pages = await allPages((after) => gw.get(`/v1/projects${query(after, "limit=100")}`, auth(t)));
    expectShortPages(pages, 100, (p) => p.id, ids);
  }, 120_000);
});

describe("the live stream's replay over the message size", () => {
  /** The organization's events in the live stream's order. */
  async function streamOrder(org: string): Promise<string[]> {
    const rows = await db<Array<{ event_id: string }>>`
      select event_id from tasks.event_stream where organization_id = ${org} order by stream_seq`;
    return rows.map((r) => r.event_id);
  }

  it("when a stream resumes with Last-Event-ID behind 450 events of 2,500-character descriptions (over 1 MiB), then every event comes once, in order, then live ones", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 100_000 });
    const start = await gw.post("/v1/tasks", { title: "before the backlog" }, auth(t));
    expect(start.status, say(start)).toBe(201);
    const [resumeAfter] = await eventually(
      async () => {
        const order = await streamOrder(t.organizationId);
        return order.length === 1 && order;
      },
      { what: "the first event to be published" },
    );
    for (let b = 0; b < 5; b++) {
      const operations = Array.from({ length: 90 }, (_, i) => ({ method: "create", body: { title: `backlog ${b * 90 + i}`, description: DESCRIPTION } }));
      const r = await gw.post("/v1/tasks/batch", { operations }, auth(t));
      expect(r.status, say(r)).toBe(200);
    }
    const backlog = await eventually(
      async () => {
        const order = await streamOrder(t.organizationId);
        return order.length === 451 && order.slice(1);
      },
      { timeoutMs: 60_000, what: "the backlog to be published" },
    );
    const [size] = await db<Array<{ total: number }>>`
      select sum(octet_length(payload::text))::int as total from tasks.events where id = any(${backlog})`;
    expect(size?.total).toBeGreaterThan(1024 * 1024);

    const s = await openSse(`${stack.gatewayUrls[0]}/v1/events/stream`, { token: t.apiKey, lastEventId: resumeAfter as string });
    expect(s.status, s.problem === undefined ? "" : JSON.stringify(s.problem)).toBe(200);
    await s.nth(450, 60_000);
    // A write after the backlog comes live, after it: anything replayed twice would have come before.
    const live = await gw.post("/v1/tasks", { title: "after the backlog" }, auth(t));
    expect(live.status, say(live)).toBe(201);
    const last = await s.nth(451, 30_000);
    s.close();
    expect(JSON.parse(last.data)).toMatchObject({ type: "task.created", data: { id: live.body.id } });
    const got = s.messages.map((m) => m.id);
    expect(got.slice(0, 450)).toEqual(backlog);
    expect(new Set(got).size).toBe(got.length);
  }, 180_000);

  it("when a stream resumes through events published before the stream's order was recorded, over 1 MiB together, then each comes once, in the feed's order, then the recorded ones", async () => {
    const t = await f.tenant();
    const made = await gw.post("/v1/tasks", { title: "recorded" }, auth(t));
    expect(made.status, say(made)).toBe(201);
    const [recorded] = await eventually(
      async () => {
        const order = await streamOrder(t.organizationId);
        return order.length === 1 && order;
      },
      { what: "the create to be published" },
    );
    // Four events as an earlier version left them (in the feed, with no place in the stream), each
    // carrying a task with 594 kB notes.
    const legacy = [4, 3, 2, 1].map((days) => ({ id: `evt_legacy_big_${days}_${t.organizationId}`, days }));
    for (const l of legacy) {
      const at = new Date(Date.now() - l.days * 86_400_000).toISOString();
      const payload = { id: l.id, type: "task.updated", organization_id: t.organizationId, created_at: at, data: { ...made.body, notes: LONG_NOTES } };
      await db`insert into tasks.events (id, organization_id, type, created_at, payload)
        values (${l.id}, ${t.organizationId}, 'task.updated', ${at}, ${db.json(payload as never)})`;
    }
    const s = await openSse(`${stack.gatewayUrls[0]}/v1/events/stream?after=${legacy[0]?.id}`, { token: t.apiKey });
    expect(s.status, s.problem === undefined ? "" : JSON.stringify(s.problem)).toBe(200);
    await s.nth(4, 30_000);
    const live = await gw.post("/v1/tasks", { title: "live" }, auth(t));
    expect(live.status, say(live)).toBe(201);
    await s.nth(5, 30_000);
    s.close();
    expect(s.messages.map((m) => m.id)).toEqual([legacy[1]?.id, legacy[2]?.id, legacy[3]?.id, recorded, expect.any(String)]);
    expect(JSON.parse(s.messages[1]?.data ?? "{}")).toMatchObject({ data: { notes: LONG_NOTES } });
    expect(JSON.parse(s.messages[4]?.data ?? "{}")).toMatchObject({ type: "task.created", data: { id: live.body.id } });
  }, 120_000);
});
