import {
  type Api,
  type ApiResponse,
  api,
  eventually,
  factories,
  randomWords,
  type StartedStack,
  startStack,
  type Tenant,
  gatewayUrl,
  bodyOf,
} from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { page, Task, type Page } from "@tasksvc/contracts";

// One organization's worst searches must not stop task operations for every other one: each
// organization holds at most a quarter of the tasks service's connections for scans (past that,
// 429 with Retry-After; libs/db/test/scans.test.ts holds the share itself), every statement has
// a time limit (a search that reaches it answers 400 query_too_expensive, never a 503 that invites
// the same work again), nothing keeps running in the database after its caller was answered, and
// a long read of one organization holds back no other's sync listing.
//
// Its own stack, with a statement limit of 1 s. The worst search (50 negated full-text
// conditions, one of which every note fails, so the scan passes over all 200 tasks with
// 99,000-character notes, each costing a text vector of its own) takes seconds, so it always
// reaches the limit, while ordinary work never does, even on a busy machine (at 100 ms a lock wait
// on the quota's row did, under load that had nothing to do with the searches).
let stack: StartedStack;
let gw: Api;
let f: ReturnType<typeof factories>;
let db: postgres.Sql;

/** A word every heavy task's notes hold. */
const COMMON = "everywhereword";

/**
 * Fifty negated full-text conditions, the most the filter grammar allows, each over every note;
 * the last fails on every heavy task, so no task matches and the scan reads them all.
 */
const worstFilter = () => ({
  and: [
    ...Array.from({ length: 49 }, (_, i) => ({ not: { field: "text", op: "matches", value: `"${randomWords(40)}" -w${i}` } })),
    { not: { field: "text", op: "matches", value: COMMON } },
  ],
});

/** The tasks service's statements still running for a search or a list (the page statement). */
async function runningScans(): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and state = 'active' and application_name like 'tasksvc-tasks-%' and query like '%as reencode%'`;
  return row?.n ?? 0;
}

let hostile: Tenant;
let other: Tenant;
beforeAll(async () => {
  stack = await startStack({ env: { DATABASE_STATEMENT_TIMEOUT: "1s" }, replicas: { gateway: 1, tasks: 1 } });
  gw = api(gatewayUrl(stack));
  f = factories(stack);
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  [hostile, other] = await Promise.all([f.tenant("team"), f.tenant("team")]);
  // Two hundred tasks, then 99,000-character notes written into their rows directly, in one
  // statement: through the API, indexing that much text would take most of the limit each time.
  for (let i = 0; i < 200; i += 20) {
    const made = await Promise.all(Array.from({ length: 20 }, (_, k) => gw.post("/v1/tasks", { title: `heavy-${i + k}` }, { token: hostile.apiKey })));
    for (const r of made) expect(r.status, r.text).toBe(201);
  }
  const notes = `${randomWords(98_900)} ${COMMON}`;
  await db`update tasks.tasks set notes = ${notes} where organization_id = ${hostile.organizationId}`;
  expect((await gw.post("/v1/tasks", { title: "neighbour" }, { token: other.apiKey })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await db?.end({ timeout: 1 });
  await f?.close();
  await stack?.stop();
});

describe("one organization's worst searches beside another's ordinary work", () => {
  it("when eight of them run at once, then each answers 400 query_too_expensive (or 429), the other organization's list, create and read answer, and no statement outlives its answer", async () => {
    const searches = Array.from({ length: 8 }, () => gw.post("/v1/tasks/search", { filter: worstFilter(), limit: 100 }, { token: hostile.apiKey }));
    let searching = true;
    const settled = Promise.all(searches).finally(() => {
      searching = false;
    });
    // The neighbour keeps working for as long as the searches run.
    const neighbour: ApiResponse[] = [];
    while (searching) {
      const [list, created] = await Promise.all([
        gw.get("/v1/tasks?limit=5", { token: other.apiKey }),
        gw.post("/v1/tasks", { title: `ordinary ${neighbour.length}` }, { token: other.apiKey }),
      ]);
      neighbour.push(list, created);
      if (created.status === 201) neighbour.push(await gw.get(`/v1/tasks/${bodyOf(created, Task).id}`, { token: other.apiKey }));
    }
    const answers = await settled;
    for (const r of neighbour) expect([200, 201], `the neighbour got ${r.status}: ${r.text}`).toContain(r.status);
    expect(neighbour.length).toBeGreaterThan(0);
    for (const r of answers) {
      expect([400, 429], `a worst search answered ${r.status}: ${r.text}`).toContain(r.status);
      if (r.status === 400) {
        expect(r.body.code).toBe("query_too_expensive");
        expect(r.body.detail).toContain("narrow the filter");
      } else {
        expect(r.body.code).toBe("rate_limited");
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      }
    }
    expect(answers.filter((r) => r.status === 400).length, answers.map((r) => r.status).join()).toBeGreaterThanOrEqual(1);
    await eventually(async () => expect(await runningScans()).toBe(0), { timeoutMs: 5_000 });
  }, 90_000);

  it("when the same search is narrowed to a few words, then it answers 200 within the same limit", async () => {
    const r = await gw.post(
      "/v1/tasks/search",
      { filter: { and: [{ field: "title", op: "contains", value: "heavy-7" }, ...worstFilter().and.slice(0, 3)] } },
      { token: hostile.apiKey },
    );
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(bodyOf(r, page(Task)).data.length).toBeGreaterThan(0);
  });
});

describe("the sync order beside another organization's long read", () => {
  it("when a read of the tasks service runs for seconds, then another organization's sync listing still reaches the task it just wrote", async () => {
    // A long statement on a connection named like the service's read connections, as another
    // organization's long search would be; it writes nothing.
    const reader = postgres(stack.databaseUrl, { max: 1, onnotice: () => {}, connection: { application_name: "tasksvc-tasks-longread-read" } });
    try {
      const since = new Date(Date.now() - 1000).toISOString();
      const long = reader`select pg_sleep(4)`.execute();
      long.catch(() => undefined);
      await eventually(async () => {
        const [row] = await db<
          { n: number }[]
        >`select count(*)::int as n from pg_stat_activity where application_name = 'tasksvc-tasks-longread-read' and state = 'active'`;
        expect(row?.n).toBe(1);
      });
      const created = await gw.post("/v1/tasks", { title: "written during the read" }, { token: other.apiKey });
      expect(created.status, created.text).toBe(201);
      const page = await gw.get<Page<Task>>(`/v1/tasks?sort=updated_at&updated_gte=${encodeURIComponent(since)}&limit=100`, { token: other.apiKey });
      expect(page.status, page.text).toBe(200);
      expect(page.body.data.map((t) => t.id)).toContain(created.body.id);
      await long;
    } finally {
      await reader.end({ timeout: 1 });
    }
  }, 60_000);
});
