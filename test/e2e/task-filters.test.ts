import { e2eContext, eventually, type JsonBody, type Tenant } from "@tasksvc/testing";
import { beforeAll, describe, expect, it } from "vitest";

// Finding tasks: the filters, full text and sort of GET /v1/tasks, and the filter tree of
// POST /v1/tasks/search, through HTTP against the real stack. Expectations name tasks by number
// (T-3 is 3): each test makes its tasks in order in a fresh organization. Tenants are on the team
// plan, whose burst allowance covers a test's many reads. Bad input and cursors are in
// task-search-errors.test.ts.
const { gw, f } = e2eContext();

type Body = Record<string, unknown>;
interface TaskJson {
  id: string;
  title: string;
  created_at: string;
  updated_at: string;
}

const num = (id: string) => Number(id.slice(2));
const ascending = (ns: number[]) => [...ns].sort((a, b) => a - b);

async function make(t: Tenant, specs: Body[]): Promise<TaskJson[]> {
  const made: TaskJson[] = [];
  // One at a time: the numbers (T-1, T-2, …) follow the order of the specs.
  for (const spec of specs) {
    const r = await gw.post("/v1/tasks", spec, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    made.push(r.body as TaskJson);
  }
  return made;
}
async function tenantWith(specs: Body[]): Promise<{ t: Tenant; tasks: TaskJson[] }> {
  const t = await f.tenant("team");
  return { t, tasks: await make(t, specs) };
}
async function project(t: Tenant, name: string): Promise<string> {
  const r = await gw.post("/v1/projects", { name }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}
async function block(t: Tenant, blocked: number, blocker: number) {
  const r = await gw.post(`/v1/tasks/T-${blocked}/dependencies`, { blocker_task_id: `T-${blocker}` }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
}
async function patch(t: Tenant, n: number, body: Body): Promise<TaskJson> {
  const r = await gw.patch(`/v1/tasks/T-${n}`, body, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body as TaskJson;
}
async function archive(t: Tenant, n: number) {
  const r = await gw.post(`/v1/tasks/T-${n}/archive`, undefined, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
}

/** A query string as a client writes it: values encoded, the commas of a list left as they are. */
const qs = (query: Record<string, string>) =>
  Object.entries(query)
    .map(([k, v]) => `${k}=${encodeURIComponent(v).replaceAll("%2C", ",")}`)
    .join("&");

/** The task numbers a GET /v1/tasks query finds, in its order (all on one page). */
async function listed(t: Tenant, query: Record<string, string>): Promise<number[]> {
  const r = await gw.get(`/v1/tasks?${qs({ limit: "100", ...query })}`, { token: t.apiKey });
  expect(r.status, `${qs(query)}: ${r.text}`).toBe(200);
  expect(r.body.has_more, r.text).toBe(false);
  return r.body.data.map((x: TaskJson) => num(x.id));
}
/** The task numbers a search finds, in its order (all on one page). */
async function searched(t: Tenant, body: Body): Promise<number[]> {
  const r = await gw.post("/v1/tasks/search", { limit: 100, ...body }, { token: t.apiKey });
  expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(200);
  expect(r.body.has_more, r.text).toBe(false);
  return r.body.data.map((x: TaskJson) => num(x.id));
}
/** Every page of a list, `limit` at a time, following next_cursor: the numbers in order. */
async function pagedList(t: Tenant, query: Record<string, string>, limit: number): Promise<number[]> {
  const seen: number[] = [];
  let after: string | undefined;
  for (let page = 0; page < 50; page++) {
    const query1 = qs({ ...query, limit: String(limit), ...(after ? { after } : {}) });
    const r = await gw.get(`/v1/tasks?${query1}`, { token: t.apiKey });
    expect(r.status, `${query1}: ${r.text}`).toBe(200);
    expect(r.body.data.length, r.text).toBeLessThanOrEqual(limit);
    seen.push(...r.body.data.map((x: TaskJson) => num(x.id)));
    if (!r.body.has_more) return seen;
    after = r.body.next_cursor as string;
  }
  throw new Error("more than 50 pages");
}
async function pagedSearch(t: Tenant, body: Body, limit: number): Promise<number[]> {
  const seen: number[] = [];
  let after: string | undefined;
  for (let page = 0; page < 50; page++) {
    const req = { ...body, limit, ...(after ? { after } : {}) };
    const r = await gw.post("/v1/tasks/search", req, { token: t.apiKey });
    expect(r.status, `${JSON.stringify(req)}: ${r.text}`).toBe(200);
    expect(r.body.data.length, r.text).toBeLessThanOrEqual(limit);
    seen.push(...r.body.data.map((x: TaskJson) => num(x.id)));
    if (!r.body.has_more) return seen;
    after = r.body.next_cursor as string;
  }
  throw new Error("more than 50 pages");
}
const cond = (field: string, op: string, value: unknown) => ({ field, op, value });
const S = (status: string) => cond("status", "eq", status);
/** Every current task: a search names its filter. */
const current = cond("archived", "eq", false);
/** A time `hours` east of UTC, written with that offset: the same instant, spelled otherwise. */
function withOffset(iso: string, hours: number): string {
  const shifted = new Date(Date.parse(iso) + hours * 3_600_000).toISOString().slice(0, 23);
  return `${shifted}+${String(hours).padStart(2, "0")}:00`;
}

describe("GET /v1/tasks filters", () => {
  it("when filtered by one status or a comma list of them, then exactly the tasks in those statuses", async () => {
    const { t } = await tenantWith(["TODO", "IN_PROGRESS", "BLOCKED", "COMPLETED", "IN_REVIEW", "TODO"].map((status, i) => ({ title: `s${i}`, status })));
    expect(ascending(await listed(t, { status: "TODO" }))).toEqual([1, 6]);
    expect(ascending(await listed(t, { status: "TODO,BLOCKED" }))).toEqual([1, 3, 6]);
    expect(ascending(await listed(t, { status: "IN_REVIEW,COMPLETED,IN_PROGRESS" }))).toEqual([2, 4, 5]);
    expect(ascending(await listed(t, { status: "TODO,IN_PROGRESS,IN_REVIEW,COMPLETED,BLOCKED" }))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("when filtered by priorities, then the tasks of those priorities, never one without a priority", async () => {
    const { t } = await tenantWith(
      [{ priority: "LOW" }, {}, { priority: "HIGH" }, { priority: "URGENT" }, { priority: "MEDIUM" }].map((b, i) => ({ title: `p${i}`, ...b })),
    );
    expect(await listed(t, { priority: "LOW" })).toEqual([1]);
    expect(ascending(await listed(t, { priority: "HIGH,URGENT" }))).toEqual([3, 4]);
    expect(ascending(await listed(t, { priority: "LOW,MEDIUM,HIGH,URGENT" }))).toEqual([1, 3, 4, 5]);
    expect(ascending(await listed(t, { priority: "URGENT", status: "TODO" }))).toEqual([4]);
  });

  it("when bounded by created time with a task's own created_at, then created_gte includes it and created_lt excludes it, in any offset", async () => {
    const { t, tasks } = await tenantWith([1, 2, 3, 4].map((i) => ({ title: `c${i}` })));
    // Shown times have milliseconds; a bound at a shown time splits the tasks exactly where the
    // shown times do, so the expectations are computed from them (two tasks may share one).
    const at = (n: number) => tasks[n - 1]?.created_at as string;
    const where = (keep: (c: string) => boolean) => tasks.filter((x) => keep(x.created_at)).map((x) => num(x.id));
    const gte2 = await listed(t, { created_gte: at(2) });
    expect(ascending(gte2)).toEqual(where((c) => c >= at(2)));
    expect(gte2).toContain(2);
    const lt2 = await listed(t, { created_lt: at(2) });
    expect(ascending(lt2)).toEqual(where((c) => c < at(2)));
    expect(lt2).not.toContain(2);
    expect(ascending(await listed(t, { created_gte: at(2), created_lt: at(4) }))).toEqual(where((c) => c >= at(2) && c < at(4)));
    expect(ascending(await listed(t, { created_gte: withOffset(at(2), 2), created_lt: withOffset(at(4), 5) }))).toEqual(where((c) => c >= at(2) && c < at(4)));
    expect(await listed(t, { created_gte: at(3), created_lt: at(3) })).toEqual([]);
  });

  it("when bounded by updated time, then the bound applies to the last change, not to creation", async () => {
    const { t } = await tenantWith([1, 2, 3].map((i) => ({ title: `u${i}` })));
    const changed = await patch(t, 1, { title: "u1 changed" });
    const u = changed.updated_at;
    const all = await gw.get("/v1/tasks?limit=100", { token: t.apiKey });
    const where = (keep: (c: string) => boolean) => ascending(all.body.data.filter((x: TaskJson) => keep(x.updated_at)).map((x: TaskJson) => num(x.id)));
    const gte = await listed(t, { updated_gte: u });
    expect(ascending(gte)).toEqual(where((c) => c >= u));
    expect(gte).toContain(1);
    const lt = await listed(t, { updated_lt: u });
    expect(ascending(lt)).toEqual(where((c) => c < u));
    expect(lt).not.toContain(1);
    expect(lt).toContain(2);
  });

  it("when bounded by a due time, a date (00:00 UTC) or a date-time compared exactly, then tasks without a due date never match", async () => {
    const { t } = await tenantWith(
      [{ due_date: "2026-03-01" }, { due_date: "2026-03-02" }, { due_date: "2026-03-03" }, {}].map((b, i) => ({ title: `d${i}`, ...b })),
    );
    const cases: Array<[Record<string, string>, number[]]> = [
      [{ due_gte: "2026-03-02" }, [2, 3]],
      [{ due_lt: "2026-03-02" }, [1]],
      [{ due_gte: "2026-03-02", due_lt: "2026-03-03" }, [2]],
      [{ due_gte: "2026-03-02T00:00:00Z" }, [2, 3]],
      // 2026-03-01T23:30-02:00 is 2026-03-02 01:30 UTC: after the task due at 00:00 UTC that day.
      [{ due_gte: "2026-03-01T23:30:00-02:00" }, [3]],
      // 2026-03-03T20:00Z is after the task due at 00:00 UTC that day.
      [{ due_lt: "2026-03-03T20:00:00Z" }, [1, 2, 3]],
      // 2026-03-02T00:00+05:00 is 2026-03-01 19:00 UTC: after the task due at 00:00 UTC on the 1st.
      [{ due_lt: "2026-03-02T00:00:00+05:00" }, [1]],
      [{ due_gte: "1000-01-01" }, [1, 2, 3]],
      [{ due_lt: "9999-12-31" }, [1, 2, 3]],
      [{ due_gte: "2026-03-04" }, []],
    ];
    for (const [query, want] of cases) expect(ascending(await listed(t, query)), qs(query)).toEqual(want);
  });

  it("when filtered by is_blocked, then a task is blocked while one of its blockers is not COMPLETED", async () => {
    const { t } = await tenantWith([{}, {}, {}, { status: "COMPLETED" }, {}, {}, { status: "COMPLETED" }, {}].map((b, i) => ({ title: `b${i + 1}`, ...b })));
    await block(t, 1, 2); // an open blocker
    await block(t, 3, 4); // a completed blocker only
    await block(t, 5, 6); // one open and one completed
    await block(t, 5, 7);
    expect(ascending(await listed(t, { is_blocked: "true" }))).toEqual([1, 5]);
    expect(ascending(await listed(t, { is_blocked: "false" }))).toEqual([2, 3, 4, 6, 7, 8]);
    await patch(t, 2, { status: "COMPLETED" });
    expect(ascending(await listed(t, { is_blocked: "true" }))).toEqual([5]);
    expect(ascending(await listed(t, { is_blocked: "false", status: "TODO" }))).toEqual([1, 3, 6, 8]);
  });

  it("when archived is not given, then only current tasks match a filter; archived=true finds only archived ones", async () => {
    const { t } = await tenantWith([1, 2, 3].map((i) => ({ title: `archive me ${i}`, priority: "HIGH" })));
    await archive(t, 2);
    expect(ascending(await listed(t, { priority: "HIGH" }))).toEqual([1, 3]);
    expect(ascending(await listed(t, { priority: "HIGH", archived: "false" }))).toEqual([1, 3]);
    expect(await listed(t, { priority: "HIGH", archived: "true" })).toEqual([2]);
    expect(ascending(await listed(t, { q: "archive" }))).toEqual([1, 3]);
    expect(await listed(t, { q: "archive", archived: "true" })).toEqual([2]);
  });
});

describe("GET /v1/tasks full text (q)", () => {
  it("when q has several words, then all must match; a phrase must match in order; or joins; -word excludes", async () => {
    const { t } = await tenantWith([{ title: "invoice export failed" }, { title: "export the invoice" }, { title: "invoice import" }, { title: "export csv" }]);
    const cases: Array<[string, number[]]> = [
      ["invoice", [1, 2, 3]],
      ["invoice export", [1, 2]],
      ['"invoice export"', [1]],
      ["import or csv", [3, 4]],
      ["invoice -failed", [2, 3]],
      ["invoice -export", [3]],
      ["export -invoice", [4]],
      ["nothing", []],
    ];
    for (const [q, want] of cases) expect(ascending(await listed(t, { q })), q).toEqual(want);
  });

  it("when q differs in case or accents, then it still matches (resume finds Résumé), with no stemming", async () => {
    const { t } = await tenantWith([{ title: "Résumé review" }, { title: "RESUME parser" }, { title: "running tests" }, { title: "unrelated" }]);
    for (const q of ["resume", "Résumé", "RÉSUMÉ", "rEsUmE"]) expect(ascending(await listed(t, { q })), q).toEqual([1, 2]);
    expect(await listed(t, { q: "running" })).toEqual([3]);
    expect(await listed(t, { q: "run" })).toEqual([]);
  });

  it("when the words are in the description or the notes, then q finds the task", async () => {
    const { t } = await tenantWith([
      { title: "one", description: "the quarterly numbers" },
      { title: "two", notes: "ask about the Quarterly plan" },
      { title: "three", description: "monthly", notes: "weekly" },
      { title: "quarterly in the title" },
    ]);
    expect(ascending(await listed(t, { q: "quarterly" }))).toEqual([1, 2, 4]);
    expect(ascending(await listed(t, { q: "weekly monthly three" }))).toEqual([3]);
    expect(ascending(await listed(t, { q: "quarterly -plan" }))).toEqual([1, 4]);
  });

  it("when the words are Greek or Cyrillic, then q matches them regardless of case and accents", async () => {
    const { t } = await tenantWith([{ title: "Καλημέρα κόσμε" }, { title: "report", description: "Квартальный отчёт" }, { title: "plain latin" }]);
    const cases: Array<[string, number[]]> = [
      ["καλημέρα", [1]],
      ["ΚΑΛΗΜΕΡΑ", [1]],
      ["κόσμε καλημερα", [1]],
      ["отчёт", [2]],
      ["ОТЧЕТ", [2]],
      ["квартальный -отчет", []],
      ["καλημέρα or квартальный", [1, 2]],
    ];
    for (const [q, want] of cases) expect(ascending(await listed(t, { q })), q).toEqual(want);
  });

  it("when q is combined with other filters, then a task must pass all of them", async () => {
    const { t } = await tenantWith([
      { title: "deploy api", status: "TODO", priority: "HIGH" },
      { title: "deploy web", status: "IN_PROGRESS", priority: "HIGH" },
      { title: "deploy docs", status: "TODO", priority: "LOW" },
    ]);
    expect(ascending(await listed(t, { q: "deploy", status: "TODO" }))).toEqual([1, 3]);
    expect(await listed(t, { q: "deploy", status: "TODO", priority: "HIGH" })).toEqual([1]);
    expect(await listed(t, { q: "deploy -api", priority: "HIGH" })).toEqual([2]);
  });
});

describe("GET /v1/tasks sort", () => {
  // Priority, due day and points with ties and gaps: 1 and 4 tie on all three.
  const specs: Body[] = [
    { priority: "HIGH", due_date: "2026-03-02", story_points: 3 },
    {},
    { priority: "LOW", due_date: "2026-03-01", story_points: 5 },
    { priority: "HIGH", due_date: "2026-03-02", story_points: 3 },
    { priority: "URGENT", story_points: 1 },
    { priority: "MEDIUM", due_date: "2026-03-03" },
  ].map((b, i) => ({ title: `sort ${i + 1}`, ...b }));
  // Ties go by number in the sort's direction; tasks without the value come last either way.
  const orders: Array<[string, number[]]> = [
    ["priority", [3, 6, 1, 4, 5, 2]],
    ["-priority", [5, 4, 1, 6, 3, 2]],
    ["story_points", [5, 1, 4, 3, 2, 6]],
    ["-story_points", [3, 4, 1, 5, 6, 2]],
    ["created_at", [1, 2, 3, 4, 5, 6]],
    ["-created_at", [6, 5, 4, 3, 2, 1]],
    // 3 and then 1 are changed after all are made.
    ["updated_at", [2, 4, 5, 6, 3, 1]],
    ["-updated_at", [1, 3, 6, 5, 4, 2]],
  ];
  const dueOrders: Array<[string, number[]]> = [
    ["due_date", [3, 1, 4, 6, 2, 5]],
    ["-due_date", [6, 4, 1, 3, 5, 2]],
  ];

  // Read only, shared by the tests of each key below.
  let t: Tenant;
  beforeAll(async () => {
    t = (await tenantWith(specs)).t;
    await patch(t, 3, { title: "sort 3 changed" });
    await patch(t, 1, { title: "sort 1 changed" });
  });

  for (const [sort, want] of orders) {
    it(`when sorted by ${sort}, then ${want.join(", ")} (LOW < MEDIUM < HIGH < URGENT, ties by number, none last), in pages of one too`, async () => {
      expect(await listed(t, { sort })).toEqual(want);
      // Pages of one: every task is once the last of a page, those without the value included.
      expect(await pagedList(t, { sort }, 1)).toEqual(want);
    });
  }

  it("when sorted by due_date either way, then ties by number and tasks without one last", async () => {
    for (const [sort, want] of dueOrders) expect(await listed(t, { sort }), sort).toEqual(want);
  });

  it("when paged one at a time by due_date either way, then pages ending on a task without one go on, in the same order", async () => {
    for (const [sort, want] of dueOrders) expect(await pagedList(t, { sort }, 1), sort).toEqual(want);
  });

  it("when no sort is given, then the newest change comes first, and a filtered list pages in its sort", async () => {
    expect(await listed(t, {})).toEqual([1, 3, 6, 5, 4, 2]);
    expect(await pagedList(t, { sort: "-priority", priority: "HIGH,URGENT,LOW" }, 1)).toEqual([5, 4, 1, 3]);
  });

  it("when paging ascending by updated_at and a seen task changes meanwhile, then it comes again at the end", async () => {
    const { t } = await tenantWith([1, 2, 3].map((i) => ({ title: `sync ${i}` })));
    const first = await gw.get("/v1/tasks?sort=updated_at&limit=1", { token: t.apiKey });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.map((x: TaskJson) => x.id)).toEqual(["T-1"]);
    const after = encodeURIComponent(first.body.next_cursor as string);
    const changed = await patch(t, 1, { title: "sync 1 changed" });
    // A fresh change shows once the writes that began before it have committed: soon, not at once.
    const rest = await eventually(
      async () => {
        const r = await gw.get(`/v1/tasks?sort=updated_at&limit=1&after=${after}`, { token: t.apiKey });
        expect(r.status, r.text).toBe(200);
        const more = await pagedList(t, { sort: "updated_at" }, 100);
        expect(more).toEqual([2, 3, 1]);
        return r;
      },
      { what: "the changed task to sort last" },
    );
    expect(rest.body.data.map((x: TaskJson) => x.id)).toEqual(["T-2"]);
    expect(await listed(t, { sort: "updated_at", updated_gte: changed.updated_at })).toEqual([1]);
  });
});

describe("POST /v1/tasks/search", () => {
  // One organization, read only, shared by the table below (one tenant instead of ninety).
  // 1-5 are current, 6 is archived; 4 is blocked by 5; 2 and 3 are subtasks of 1.
  let t: Tenant;
  let p1 = "";
  let p2 = "";
  let shown: TaskJson[] = [];
  beforeAll(async () => {
    t = await f.tenant("team");
    p1 = await project(t, "P1");
    p2 = await project(t, "P2");
    await make(t, [
      {
        title: "Alpha report",
        status: "TODO",
        priority: "LOW",
        due_date: "2026-03-01",
        story_points: 1,
        project_ids: [p1],
        description: "quarterly invoice export",
      },
      { title: "Beta review", status: "IN_PROGRESS", priority: "HIGH", due_date: "2026-03-05", story_points: 3, project_ids: [p1, p2], parent_task_id: "T-1" },
      { title: "gamma 100% done_x", status: "COMPLETED", parent_task_id: "T-1" },
      { title: "Delta plan", status: "BLOCKED", priority: "URGENT", due_date: "2026-03-10", story_points: 5, project_ids: [p2] },
      { title: "Epsilon", status: "IN_REVIEW", priority: "MEDIUM", story_points: 2.5, notes: "invoice draft" },
      { title: "Zeta archived", status: "TODO", priority: "LOW", story_points: 1, description: "invoice" },
    ]);
    await block(t, 4, 5);
    await archive(t, 6);
    const all = await gw.get("/v1/tasks?limit=100", { token: t.apiKey });
    shown = all.body.data as TaskJson[];
  });

  type Filter = Body | ((ids: { p1: string; p2: string }) => Body);
  const table: Array<[string, Filter, number[]]> = [
    ["status eq", S("TODO"), [1]],
    ["status neq", cond("status", "neq", "TODO"), [2, 3, 4, 5]],
    ["status in", cond("status", "in", ["TODO", "BLOCKED"]), [1, 4]],
    ["status nin", cond("status", "nin", ["TODO", "BLOCKED"]), [2, 3, 5]],
    ["priority eq", cond("priority", "eq", "HIGH"), [2]],
    ["priority neq (a task without one is in)", cond("priority", "neq", "HIGH"), [1, 3, 4, 5]],
    ["priority in", cond("priority", "in", ["LOW", "URGENT"]), [1, 4]],
    ["priority nin (a task without one is in)", cond("priority", "nin", ["LOW", "URGENT"]), [2, 3, 5]],
    ["priority is_null true", cond("priority", "is_null", true), [3]],
    ["priority is_null false", cond("priority", "is_null", false), [1, 2, 4, 5]],
    ["project_id eq", ({ p1 }) => cond("project_id", "eq", p1), [1, 2]],
    ["project_id neq", ({ p1 }) => cond("project_id", "neq", p1), [3, 4, 5]],
    ["project_id in", ({ p1, p2 }) => cond("project_id", "in", [p1, p2]), [1, 2, 4]],
    ["project_id nin", ({ p2 }) => cond("project_id", "nin", [p2]), [1, 3, 5]],
    ["project_id is_null true", cond("project_id", "is_null", true), [3, 5]],
    ["project_id is_null false", cond("project_id", "is_null", false), [1, 2, 4]],
    ["project_id eq a project that does not exist", cond("project_id", "eq", "prj_nothing"), []],
    ["parent_task_id eq", cond("parent_task_id", "eq", "T-1"), [2, 3]],
    ["parent_task_id eq, spelled without T-", cond("parent_task_id", "eq", "1"), [2, 3]],
    ["parent_task_id neq", cond("parent_task_id", "neq", "T-1"), [1, 4, 5]],
    ["parent_task_id in", cond("parent_task_id", "in", ["T-1", "T-4"]), [2, 3]],
    ["parent_task_id nin", cond("parent_task_id", "nin", ["T-1"]), [1, 4, 5]],
    ["parent_task_id is_null true", cond("parent_task_id", "is_null", true), [1, 4, 5]],
    ["parent_task_id is_null false", cond("parent_task_id", "is_null", false), [2, 3]],
    ["parent_task_id eq a task that does not exist", cond("parent_task_id", "eq", "T-999"), []],
    ["archived eq true", cond("archived", "eq", true), [6]],
    ["archived eq false", cond("archived", "eq", false), [1, 2, 3, 4, 5]],
    ["archived neq false", cond("archived", "neq", false), [6]],
    ["is_blocked eq true", cond("is_blocked", "eq", true), [4]],
    ["is_blocked eq false", cond("is_blocked", "eq", false), [1, 2, 3, 5]],
    ["is_blocked neq true", cond("is_blocked", "neq", true), [1, 2, 3, 5]],
    ["is_blocked neq false", cond("is_blocked", "neq", false), [4]],
    ["due_date eq", cond("due_date", "eq", "2026-03-05"), [2]],
    ["due_date neq (a task without one is in)", cond("due_date", "neq", "2026-03-05"), [1, 3, 4, 5]],
    ["due_date lt", cond("due_date", "lt", "2026-03-05"), [1]],
    ["due_date lte", cond("due_date", "lte", "2026-03-05"), [1, 2]],
    ["due_date gt", cond("due_date", "gt", "2026-03-05"), [4]],
    ["due_date gte", cond("due_date", "gte", "2026-03-05"), [2, 4]],
    ["due_date is_null true", cond("due_date", "is_null", true), [3, 5]],
    ["due_date is_null false", cond("due_date", "is_null", false), [1, 2, 4]],
    ["story_points eq", cond("story_points", "eq", 3), [2]],
    ["story_points neq (a task without points is in)", cond("story_points", "neq", 3), [1, 3, 4, 5]],
    ["story_points lt", cond("story_points", "lt", 2.5), [1]],
    ["story_points lte", cond("story_points", "lte", 2.5), [1, 5]],
    ["story_points gt", cond("story_points", "gt", 2.5), [2, 4]],
    ["story_points gte", cond("story_points", "gte", 3), [2, 4]],
    ["story_points in", cond("story_points", "in", [1, 5]), [1, 4]],
    ["story_points nin (a task without points is in)", cond("story_points", "nin", [1, 5]), [2, 3, 5]],
    ["story_points is_null true", cond("story_points", "is_null", true), [3]],
    ["story_points is_null false", cond("story_points", "is_null", false), [1, 2, 4, 5]],
    ["title eq", cond("title", "eq", "Beta review"), [2]],
    ["title neq", cond("title", "neq", "Beta review"), [1, 3, 4, 5]],
    ["title contains, any case", cond("title", "contains", "LTA"), [4]],
    ["title contains a literal %", cond("title", "contains", "%"), [3]],
    ["title contains a literal _", cond("title", "contains", "_"), [3]],
    // As LIKE patterns these would match "Delta plan" and "Alpha report".
    ["title contains a_p (no wildcard)", cond("title", "contains", "a_p"), []],
    ["title contains a%p (no wildcard)", cond("title", "contains", "a%p"), []],
    ["text matches in description and notes", cond("text", "matches", "invoice"), [1, 5]],
    ["text matches with -word", cond("text", "matches", "invoice -draft"), [1]],
    ["text matches a phrase", cond("text", "matches", '"invoice export"'), [1]],
    ["and", { and: [cond("status", "in", ["TODO", "IN_PROGRESS"]), cond("priority", "eq", "HIGH")] }, [2]],
    ["or", { or: [S("TODO"), cond("priority", "eq", "URGENT")] }, [1, 4]],
    ["not of eq (a task without the value is in)", { not: cond("priority", "eq", "HIGH") }, [1, 3, 4, 5]],
    ["not of neq (a task without the value is out)", { not: cond("priority", "neq", "HIGH") }, [2]],
    ["not of lt", { not: cond("story_points", "lt", 2.5) }, [2, 3, 4, 5]],
    ["not of nin", { not: cond("story_points", "nin", [1, 5]) }, [1, 4]],
    ["not of contains", { not: cond("title", "contains", "a") }, [5]],
    ["not of not", { not: { not: S("TODO") } }, [1]],
    ["not of or", { not: { or: [S("TODO"), cond("story_points", "gte", 3)] } }, [3, 5]],
    [
      "or of and and is_null",
      ({ p1 }) => ({ or: [{ and: [cond("project_id", "eq", p1), { not: cond("is_blocked", "eq", true) }] }, cond("due_date", "is_null", true)] }),
      [1, 2, 3, 5],
    ],
    ["archived either way", { or: [cond("archived", "eq", true), cond("archived", "eq", false)] }, [1, 2, 3, 4, 5, 6]],
    ["not of archived eq false", { not: cond("archived", "eq", false) }, [6]],
    ["archived and status", { and: [cond("archived", "eq", true), S("TODO")] }, [6]],
    ["text matching only the archived task, archived not named", cond("text", "matches", "zeta"), []],
  ];
  for (const [what, filter, want] of table) {
    it(`when the filter is ${what}, then the matching tasks`, async () => {
      const body = { filter: typeof filter === "function" ? filter({ p1, p2 }) : filter };
      expect(ascending(await searched(t, body))).toEqual(want);
    });
  }

  it("when the filter names every current task, then every current task, in GET's default order", async () => {
    const found = await searched(t, { filter: current });
    expect(ascending(found)).toEqual([1, 2, 3, 4, 5]);
    expect(found).toEqual(await listed(t, {}));
  });

  /** Checks `field op <T-3's own time>`: the tasks whose shown times compare so, T-3 in or out. */
  async function compareWithOwnTime(field: "created_at" | "updated_at", op: string, keep: (v: string, at: string) => boolean, has3: boolean) {
    const current = shown.filter((x) => num(x.id) <= 5);
    const at = shown.find((x) => x.id === "T-3")?.[field] as string;
    const found = await searched(t, { filter: cond(field, op, at) });
    const want = ascending(current.filter((x) => keep(x[field], at)).map((x) => num(x.id)));
    expect(ascending(found), `${field} ${op} ${at}`).toEqual(want);
    expect(found.includes(3), `${field} ${op} ${at}`).toBe(has3);
  }

  it("when created_at and updated_at are compared with a task's own times, then gte includes it and lt excludes it", async () => {
    for (const field of ["created_at", "updated_at"] as const) {
      await compareWithOwnTime(field, "lt", (v, at) => v < at, false);
      await compareWithOwnTime(field, "gte", (v, at) => v >= at, true);
    }
  });

  it("when created_at and updated_at are compared with a task's own times, then lte includes it and gt excludes it", async () => {
    for (const field of ["created_at", "updated_at"] as const) {
      await compareWithOwnTime(field, "lte", (v, at) => v <= at, true);
      await compareWithOwnTime(field, "gt", (v, at) => v > at, false);
    }
  });

  it("when a task is found, then the page has exactly GET's shape: the task as GET shows it, has_more, next_cursor", async () => {
    const r = await gw.post("/v1/tasks/search", { filter: S("TODO") }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    const one = await gw.get("/v1/tasks/T-1", { token: t.apiKey });
    expect(r.body).toEqual({ data: [one.body], has_more: false, next_cursor: null });
    const list = await gw.get("/v1/tasks?status=TODO", { token: t.apiKey });
    expect(r.body).toEqual(list.body);
  });

  it("when sorted and paged with after, then the pages give the order of one big page", async () => {
    const filter = cond("status", "neq", "COMPLETED");
    expect(await searched(t, { filter, sort: "-story_points" })).toEqual([4, 2, 5, 1]);
    expect(await pagedSearch(t, { filter, sort: "-story_points" }, 1)).toEqual([4, 2, 5, 1]);
    expect(await pagedSearch(t, { filter, sort: "priority" }, 3)).toEqual([1, 5, 2, 4]);
    expect(await pagedSearch(t, { filter: current }, 2)).toEqual(await listed(t, {}));
  });

  it("when sorted by due_date and a page ends on a task without one, then the next page follows", async () => {
    expect(await pagedSearch(t, { filter: current, sort: "due_date" }, 2)).toEqual([1, 2, 4, 3, 5]);
    expect(await pagedSearch(t, { filter: current, sort: "-due_date" }, 2)).toEqual([4, 2, 1, 5, 3]);
  });

  it("when a key has only tasks:read, then it can search; a key without a tasks scope gets 403", async () => {
    const reader = await gw.post("/v1/api-keys", { name: "reader", scopes: ["tasks:read"] }, { token: t.apiKey });
    expect(reader.status, reader.text).toBe(201);
    const ok = await gw.post("/v1/tasks/search", { filter: S("TODO") }, { token: reader.body.key as string });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.map((x: TaskJson) => x.id)).toEqual(["T-1"]);
    const filtered = await gw.get("/v1/tasks?status=TODO&q=alpha", { token: reader.body.key as string });
    expect(filtered.status, filtered.text).toBe(200);
    const other = await gw.post("/v1/api-keys", { name: "projects only", scopes: ["projects:read"] }, { token: t.apiKey });
    expect(other.status, other.text).toBe(201);
    const denied = await gw.post("/v1/tasks/search", { filter: S("TODO") }, { token: other.body.key as string });
    expect(denied.status, denied.text).toBe(403);
    expect(denied.body.code).toBe("insufficient_scope");
  });
});

describe("another organization's tasks", () => {
  it("when one organization filters, searches or sorts, then the other's tasks never appear", async () => {
    const { t: mine } = await tenantWith([
      { title: "alpha mine", status: "TODO", priority: "HIGH", due_date: "2026-03-01", story_points: 1 },
      { title: "beta mine", status: "IN_PROGRESS" },
    ]);
    await block(mine, 2, 1);
    // The other organization has the same numbers, words and values, and more.
    const { t: theirs } = await tenantWith([
      { title: "alpha theirs", status: "TODO", priority: "HIGH", due_date: "2026-03-01", story_points: 1, description: "alpha mine" },
      { title: "beta theirs", status: "BLOCKED", priority: "URGENT", notes: "beta mine" },
      { title: "gamma theirs", status: "COMPLETED" },
    ]);
    await block(theirs, 2, 1);
    await block(theirs, 1, 3);
    await archive(theirs, 3);
    const theirProject = await project(theirs, "theirs");
    const titles = async (r: Promise<{ status: number; text: string; body: JsonBody }>) => {
      const got = await r;
      expect(got.status, got.text).toBe(200);
      return (got.body.data as TaskJson[]).map((x) => x.title).sort();
    };
    const both = ["alpha mine", "beta mine"];
    const gets: Array<[Record<string, string>, string[]]> = [
      [{}, both],
      [{ status: "TODO,BLOCKED,COMPLETED" }, ["alpha mine"]],
      [{ priority: "HIGH,URGENT" }, ["alpha mine"]],
      [{ is_blocked: "true" }, ["beta mine"]],
      [{ is_blocked: "false" }, ["alpha mine"]],
      [{ q: "alpha" }, ["alpha mine"]],
      [{ q: "mine" }, both],
      [{ q: "theirs or gamma" }, []],
      [{ q: "-zzz" }, both],
      [{ due_gte: "2026-01-01" }, ["alpha mine"]],
      [{ created_gte: "2000-01-01T00:00:00Z" }, both],
      [{ sort: "-priority" }, both],
      [{ sort: "story_points", limit: "1" }, ["alpha mine"]],
      [{ archived: "true" }, []],
    ];
    for (const [query, want] of gets) expect(await titles(gw.get(`/v1/tasks?${qs(query)}`, { token: mine.apiKey })), qs(query)).toEqual(want);
    const searches: Array<[Body, string[]]> = [
      [{ filter: current }, both],
      [{ filter: { or: [S("TODO"), S("BLOCKED")] } }, ["alpha mine"]],
      [{ filter: { not: S("IN_PROGRESS") } }, ["alpha mine"]],
      [{ filter: { not: cond("title", "contains", "mine") } }, []],
      [{ filter: { or: [cond("archived", "eq", true), cond("archived", "eq", false)] } }, both],
      [{ filter: cond("text", "matches", "theirs") }, []],
      [{ filter: cond("is_blocked", "eq", true) }, ["beta mine"]],
      [{ filter: cond("project_id", "eq", theirProject) }, []],
      [{ filter: { not: cond("project_id", "eq", theirProject) } }, both],
      [{ filter: cond("parent_task_id", "is_null", true), sort: "-priority" }, both],
    ];
    for (const [body, want] of searches) expect(await titles(gw.post("/v1/tasks/search", body, { token: mine.apiKey })), JSON.stringify(body)).toEqual(want);
  });
});
