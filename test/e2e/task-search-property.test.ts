import { randomBytes } from "node:crypto";
import { TaskPriority, TaskStatus, type Task } from "@tasksvc/contracts";
import { e2eContext, must, type Tenant } from "@tasksvc/testing";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";

// Task filters, sort and full text (GET /v1/tasks and POST /v1/tasks/search) against an oracle:
// one organization holds some 2,500 varied tasks; random filter trees, sorts and page sizes are
// sent, every page is walked, and the ids (in order) must equal the oracle's filter and sort of
// the same tasks. The bulk is written with SQL (thousands of API creates would take minutes);
// the rest goes through the API: creates (so tasks written by the service's own path are searched
// too, whatever it stores beside the row), dependency links, completions and archiving (their
// side effects on updated_at and blocking are the service's). The oracle reads the result back.

const { gw, f, db } = e2eContext();

const SEED = process.env["SEARCH_SEED"] ? Number(process.env["SEARCH_SEED"]) : 20_261_123;
const SQL_TASKS = 2_400;
const STATUSES = TaskStatus.options;
const PRIORITIES = TaskPriority.options;
const RANK: Record<string, number> = { LOW: 1, MEDIUM: 2, HIGH: 3, URGENT: 4 };
const POINTS = [0, 0.5, 1, 2, 3, 5, 8, 13, 21];
const SORT_FIELDS = ["updated_at", "created_at", "due_date", "priority", "story_points"] as const;

// Accented words and their plain spellings, words that contain each other (no stemming, no
// prefixes) and upper-case spellings.
const VOCABULARY = [
  "Résumé",
  "resume",
  "café",
  "CAFÉ",
  "naïve",
  "crème",
  "über",
  "mañana",
  "déjà",
  "façade",
  "élan",
  "jalapeño",
  "smörgåsbord",
  "run",
  "running",
  "runner",
  "report",
  "Report",
  "deploy",
  "review",
  "invoice",
  "alpha",
  "beta",
  "bug",
  "fix",
];
const QUERY_EXTRA = ["zebra", "runn", "caf", "rapport"];
const TITLE_WORDS = ["Résumé", "café", "run", "running", "report", "deploy", "Review", "invoice", "über", "bug"];
// LIKE's wildcards in titles: `contains` is a substring, not a pattern.
const SPECIAL_TITLES = ["100% done", "snake_case fix", "a_b report", "50%_off café", "C:\\path run"];

// ---------------------------------------------------------------------------------------------
// A deterministic generator for the seed data (fast-check draws the queries).

function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    chance: (p: number) => next() < p,
  };
}

const fold = (s: string) => s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
const words = (s: string) =>
  fold(s)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== "");
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const DAY_MS = 86_400_000;
/** A time the API takes (a date-time with an offset, or a day meaning 00:00 UTC) in milliseconds. */
const instantMs = (v: string) => Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v);

/** An instant in RFC 3339 with the given offset in minutes (the same instant, another spelling). */
function rfc3339(ms: number, offsetMinutes: number): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23);
  if (offsetMinutes === 0) return `${local}Z`;
  const a = Math.abs(offsetMinutes);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${local}${offsetMinutes > 0 ? "+" : "-"}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

// ---------------------------------------------------------------------------------------------
// The oracle

interface Row {
  number: number;
  id: string;
  title: string;
  status: string;
  priority: string | null;
  due: string | null;
  points: number | null;
  projects: string[];
  parent: string | null;
  archived: boolean;
  /** Microseconds since the epoch: the stored instant, finer than the API's milliseconds. */
  createdUs: number;
  updatedUs: number;
  blocked: boolean;
  words: Set<string>;
  task: Task;
}

type Cond = { field: string; op: string; value: unknown };
type Filter = Cond | { and: Filter[] } | { or: Filter[] } | { not: Filter };
interface SearchBody {
  filter: Filter;
  sort?: string;
  limit: number;
}

/** `q` / `text matches` on the words we send: `a b` (all), `a or b`, `a -b`. */
function textMatches(query: string, r: Row): boolean {
  const parts = query.split(" ");
  const has = (w: string) => words(w).every((x) => r.words.has(x));
  if (parts.length === 3 && parts[1] === "or") return has(parts[0] as string) || has(parts[2] as string);
  return parts.every((p) => (p.startsWith("-") ? !has(p.slice(1)) : has(p)));
}

function compare<T extends string | number | boolean>(have: T | null, op: string, v: T): boolean {
  if (have === null) return op === "neq";
  switch (op) {
    case "eq":
      return have === v;
    case "neq":
      return have !== v;
    case "lt":
      return have < v;
    case "lte":
      return have <= v;
    case "gt":
      return have > v;
    case "gte":
      return have >= v;
  }
  throw new Error(`oracle: no comparison ${op}`);
}

function scalar<T extends string | number | boolean>(have: T | null, c: Cond): boolean {
  switch (c.op) {
    case "is_null":
      return (have === null) === c.value;
    case "in":
      return have !== null && (c.value as T[]).includes(have);
    case "nin":
      return have === null || !(c.value as T[]).includes(have);
    default:
      return compare(have, c.op, c.value as T);
  }
}

function condition(c: Cond, r: Row): boolean {
  switch (c.field) {
    case "status":
      return scalar(r.status, c);
    case "priority":
      return scalar(r.priority, c);
    case "parent_task_id":
      return scalar(r.parent, c);
    case "archived":
      return scalar(r.archived, c);
    case "is_blocked":
      return scalar(r.blocked, c);
    // Due dates are compared as instants (every seeded one is 00:00 UTC of its day).
    case "due_date":
      return scalar(r.due === null ? null : instantMs(r.due), c.op === "is_null" ? c : { ...c, value: instantMs(c.value as string) });
    case "story_points":
      return scalar(r.points, c);
    // Time bounds compare with the time as the API shows it, to the millisecond (the stored
    // microseconds decide the order, not a bound): the generated bounds are whole milliseconds.
    case "created_at":
      return compare(Math.floor(r.createdUs / 1000), c.op, Date.parse(c.value as string));
    case "updated_at":
      return compare(Math.floor(r.updatedUs / 1000), c.op, Date.parse(c.value as string));
    case "project_id": {
      const p = r.projects;
      if (c.op === "is_null") return (p.length === 0) === c.value;
      const vs = Array.isArray(c.value) ? (c.value as string[]) : [c.value as string];
      const any = vs.some((v) => p.includes(v));
      return c.op === "eq" || c.op === "in" ? any : !any;
    }
    case "title": {
      const v = c.value as string;
      if (c.op === "contains") return r.title.toLowerCase().includes(v.toLowerCase());
      return compare(r.title, c.op, v);
    }
    case "text":
      return textMatches(c.value as string, r);
  }
  throw new Error(`oracle: no field ${c.field}`);
}

function evaluate(f: Filter, r: Row): boolean {
  if ("and" in f) return f.and.every((x) => evaluate(x, r));
  if ("or" in f) return f.or.some((x) => evaluate(x, r));
  if ("not" in f) return !evaluate(f.not, r);
  return condition(f, r);
}

function namesArchived(f: Filter): boolean {
  if ("and" in f) return f.and.some(namesArchived);
  if ("or" in f) return f.or.some(namesArchived);
  if ("not" in f) return namesArchived(f.not);
  return f.field === "archived";
}

function sortKey(field: string, r: Row): number | string | null {
  switch (field) {
    case "updated_at":
      return r.updatedUs;
    case "created_at":
      return r.createdUs;
    case "due_date":
      return r.due;
    case "priority":
      return r.priority === null ? null : (RANK[r.priority] as number);
    case "story_points":
      return r.points;
  }
  throw new Error(`oracle: no sort ${field}`);
}

/** The contract's order: the value in the sort's direction, missing values last, ties by number in the same direction. */
function sorted(rows: Row[], sort = "-updated_at"): Row[] {
  const desc = sort.startsWith("-");
  const field = desc ? sort.slice(1) : sort;
  const dir = desc ? -1 : 1;
  return [...rows].sort((a, b) => {
    const ka = sortKey(field, a);
    const kb = sortKey(field, b);
    if (ka !== kb) {
      if (ka === null) return 1;
      if (kb === null) return -1;
      return ka < kb ? -dir : dir;
    }
    return (a.number - b.number) * dir;
  });
}

function expectSame(what: string, got: string[], want: Row[]): void {
  const ids = want.map((r) => r.id);
  if (got.length === ids.length && got.every((id, i) => id === ids[i])) return;
  const at = got.findIndex((id, i) => id !== ids[i]);
  const gotSet = new Set(got);
  const wantSet = new Set(ids);
  const missing = ids.filter((id) => !gotSet.has(id)).slice(0, 8);
  const extra = got.filter((id) => !wantSet.has(id)).slice(0, 8);
  const twice = got.filter((id, i) => got.indexOf(id) !== i).slice(0, 8);
  throw new Error(
    `${what}: got ${got.length} ids, expected ${ids.length}; first difference at ${at === -1 ? Math.min(got.length, ids.length) : at} ` +
      `(got ${got[at] ?? "-"}, expected ${ids[at] ?? "-"}); expected but missing ${JSON.stringify(missing)}; unexpected ${JSON.stringify(extra)}; repeated ${JSON.stringify(twice)}; ` +
      `got ids around it ${JSON.stringify(got.slice(Math.max(0, at - 2), at + 3))}, expected ${JSON.stringify(ids.slice(Math.max(0, at - 2), at + 3))}`,
  );
}

// ---------------------------------------------------------------------------------------------
// The data set

let tenant: Tenant;
let rows: Row[] = [];
let rowById = new Map<string, Row>();
/** How often the read-back listing showed each task. */
const listed = new Map<string, number>();
const projects: string[] = [];
let parents: string[] = [];
let titles: string[] = [];
let instantsMs: number[] = [];
let dueDays: string[] = [];
const token = () => tenant.apiKey;

async function ok(r: Promise<{ status: number; text: string; body: unknown }>, status: number, what: string) {
  const got = await r;
  if (got.status !== status) throw new Error(`${what}: ${got.status} ${got.text}`);
  return got.body as Record<string, unknown>;
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

async function seed(): Promise<void> {
  const rnd = prng(SEED);
  tenant = await f.tenant();
  await f.admin("setLimits", { org: tenant.organizationId, burst: 1_000_000, quota: 100_000_000 });
  for (const name of ["Website", "Mobile", "Billing", "Ops"]) {
    projects.push((await ok(gw.post("/v1/projects", { name }, { token: token() }), 201, "project")).id as string);
  }
  const titlePool = [...SPECIAL_TITLES];
  for (let i = 0; i < 45; i++) titlePool.push(`${rnd.pick(TITLE_WORDS)} ${rnd.pick(TITLE_WORDS).toLowerCase()}`);
  const text = (n: number) => Array.from({ length: n }, () => rnd.pick(VOCABULARY)).join(rnd.pick([" ", ", ", "\n", " - "]));
  // Few distinct instants, so that sorts meet many ties (broken by number).
  const base = Date.parse("2025-01-06T08:00:00.000Z");
  const instants = Array.from({ length: 700 }, () => base + rnd.int(90 * 24 * 60) * 60_000 + rnd.int(4) * 250);
  const seeded = [];
  for (let n = 1; n <= SQL_TASKS; n++) {
    const created = rnd.pick(instants);
    const updated = rnd.chance(0.3) ? created + rnd.int(30 * DAY_MS) : created;
    const k = rnd.chance(0.4) ? 0 : rnd.chance(0.67) ? 1 : 2;
    const ps = new Set<string>();
    while (ps.size < k) ps.add(rnd.pick(projects));
    seeded.push({
      number: n,
      parent_number: n > 40 && rnd.chance(0.3) ? 1 + rnd.int(40) : null,
      archived: rnd.chance(0.05),
      version_id: `ver_${randomBytes(16).toString("base64url").replace(/[-_]/g, "x").slice(0, 22)}`,
      title: rnd.pick(titlePool),
      description: rnd.chance(0.3) ? null : text(2 + rnd.int(5)),
      status: rnd.pick(STATUSES),
      priority: rnd.chance(0.25) ? null : rnd.pick(PRIORITIES),
      due_date: rnd.chance(0.35) ? null : utcDay(Date.parse("2025-03-01T00:00:00Z") + rnd.int(60) * DAY_MS),
      notes: rnd.chance(0.5) ? null : text(1 + rnd.int(4)),
      story_points: rnd.chance(0.35) ? null : rnd.pick(POINTS),
      project_ids: [...ps],
      created_at: new Date(created).toISOString(),
      updated_at: new Date(updated).toISOString(),
    });
  }
  const org = tenant.organizationId;
  // One statement, as the service's own create: the task rows with their first version (seq 1),
  // project links and the organization's counter at the last number, so API creates go on after it.
  await db`
    with x as (
      select * from jsonb_to_recordset(${db.json(seeded)}) as x(number bigint, parent_number bigint, archived boolean, version_id text,
        title text, description text, status text, priority text, due_date date, notes text, story_points numeric, project_ids jsonb,
        created_at timestamptz, updated_at timestamptz)
    ), t as (
      insert into tasks.tasks (organization_id, number, owner_user_id, parent_number, archived, archived_at, current_version_id, version_count,
        title, description, status, priority, due_date, notes, story_points, project_ids, created_at, updated_at)
      select ${org}, number, ${tenant.userId}, parent_number, archived, case when archived then updated_at end, version_id, 1,
        title, description, status, priority, due_date::timestamp at time zone 'UTC', notes, story_points, array(select jsonb_array_elements_text(project_ids)), created_at, updated_at
      from x order by number
      returning number
    ), v as (
      insert into tasks.task_versions (id, organization_id, task_number, seq, title, description, status, priority, due_date, notes,
        story_points, project_ids, created_at)
      select version_id, ${org}, number, 1, title, description, status, priority, due_date::timestamp at time zone 'UTC', notes, story_points,
        array(select jsonb_array_elements_text(project_ids)), created_at
      from x
    ), p as (
      insert into tasks.task_projects (organization_id, task_number, project_id)
      select ${org}, number, jsonb_array_elements_text(project_ids) from x
    )
    insert into tasks.org_counters (organization_id, last_number) values (${org}, ${SQL_TASKS})`;

  // Through the API: creates, then links (blocked by an earlier task, so no cycle), completions
  // of some blockers after they were linked, and archiving (open blockers among them still block).
  const creates = Array.from({ length: 60 }, (_, i) => ({
    title: i % 7 === 0 ? rnd.pick(SPECIAL_TITLES) : rnd.pick(titlePool),
    ...(rnd.chance(0.7) ? { description: text(3) } : {}),
    ...(rnd.chance(0.5) ? { notes: text(2) } : {}),
    status: rnd.pick(STATUSES),
    ...(rnd.chance(0.7) ? { priority: rnd.pick(PRIORITIES) } : {}),
    ...(rnd.chance(0.6) ? { due_date: utcDay(Date.parse("2025-03-01T00:00:00Z") + rnd.int(60) * DAY_MS) } : {}),
    ...(rnd.chance(0.6) ? { story_points: rnd.pick(POINTS) } : {}),
    ...(rnd.chance(0.5) ? { project_ids: [rnd.pick(projects)] } : {}),
    ...(rnd.chance(0.3) ? { parent_task_id: `T-${1 + rnd.int(40)}` } : {}),
  }));
  await pool(creates, 6, (body) => ok(gw.post("/v1/tasks", body, { token: token() }), 201, "create"));
  const total = SQL_TASKS + creates.length;
  const links: Array<[number, number]> = [];
  for (let i = 0; i < 160; i++) {
    const blocked = 100 + rnd.int(total - 100);
    links.push([blocked, 1 + rnd.int(blocked - 1)]);
  }
  await pool(links, 4, ([blocked, blocker]) =>
    gw.post(`/v1/tasks/T-${blocked}/dependencies`, { blocker_task_id: `T-${blocker}` }, { token: token() }).then((r) => {
      if (r.status !== 201 && r.status !== 200) throw new Error(`link T-${blocked} ← T-${blocker}: ${r.status} ${r.text}`);
    }),
  );
  const completions = links.filter(() => rnd.chance(0.15)).map(([, blocker]) => blocker);
  await pool([...new Set(completions)], 4, (n) => ok(gw.patch(`/v1/tasks/T-${n}`, { status: "COMPLETED" }, { token: token() }), 200, "complete"));
  const archives = [...new Set(Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? (links[i]?.[1] ?? 1) : 1 + rnd.int(total))))];
  await pool(archives, 4, (n) => ok(gw.post(`/v1/tasks/T-${n}/archive`, undefined, { token: token() }), 200, "archive"));

  // Read back: every task through the list (both sides of archived), the stored instants to the
  // microsecond (the API shows milliseconds; filters and sorts work on the stored value) and links.
  const tasks = new Map<string, Task>();
  for (const archived of [false, true]) {
    let after: string | undefined;
    do {
      const qs = new URLSearchParams({ limit: "100", archived: String(archived), ...(after ? { after } : {}) });
      const page = await ok(gw.get(`/v1/tasks?${qs}`, { token: token() }), 200, "read back");
      for (const t of page["data"] as Task[]) {
        listed.set(t.id, (listed.get(t.id) ?? 0) + 1);
        tasks.set(t.id, t);
      }
      after = page["has_more"] ? (page["next_cursor"] as string) : undefined;
    } while (after);
  }
  const stored = await db<{ number: string; created_us: string; updated_us: string }[]>`
    select number::text, (extract(epoch from created_at) * 1000000)::bigint::text as created_us,
      (extract(epoch from updated_at) * 1000000)::bigint::text as updated_us
    from tasks.tasks where organization_id = ${org}`;
  expect(stored.length).toBe(total);
  // A task the listing missed (its own test below says so) is read by id, so the search is still
  // compared with every task.
  for (const s of stored) {
    const id = `T-${s.number}`;
    if (!tasks.has(id)) tasks.set(id, (await ok(gw.get(`/v1/tasks/${id}`, { token: token() }), 200, "read by id")) as unknown as Task);
  }
  const deps = await db<{ blocked: string; blocker: string }[]>`
    select blocked_number::text as blocked, blocker_number::text as blocker from tasks.dependencies where organization_id = ${org}`;
  const byId = (n: string) => must(tasks.get(`T-${n}`), `task T-${n} in the read-back`);
  const blocked = new Set(deps.filter((d) => byId(d.blocker).status !== "COMPLETED").map((d) => `T-${d.blocked}`));
  rows = stored.map((s) => {
    const t = byId(s.number);
    const row: Row = {
      number: Number(s.number),
      id: t.id,
      title: t.title,
      status: t.status,
      priority: t.priority,
      due: t.due_date === null ? null : t.due_date.slice(0, 10),
      points: t.story_points,
      projects: t.project_ids,
      parent: t.parent_task_id,
      archived: t.archived,
      createdUs: Number(s.created_us),
      updatedUs: Number(s.updated_us),
      blocked: blocked.has(t.id),
      words: new Set(words([t.title, t.description ?? "", t.notes ?? ""].join(" "))),
      task: t,
    };
    // The list shows the stored instant cut to the millisecond.
    expect(Date.parse(t.updated_at), t.id).toBe(Math.floor(row.updatedUs / 1000));
    return row;
  });
  // The oracle's is_blocked agrees with the service's dependency view.
  for (const d of deps.slice(0, 25)) {
    const view = await ok(gw.get(`/v1/tasks/T-${d.blocked}/dependencies`, { token: token() }), 200, "dependency view");
    expect(view["is_blocked"], `T-${d.blocked}`).toBe(blocked.has(`T-${d.blocked}`));
  }
  rowById = new Map(rows.map((r) => [r.id, r]));
  parents = [...new Set(rows.flatMap((r) => (r.parent ? [r.parent] : [])))];
  titles = [...new Set(rows.map((r) => r.title))];
  instantsMs = [...new Set(rows.flatMap((r) => [Math.floor(r.createdUs / 1000), Math.floor(r.updatedUs / 1000)]))];
  dueDays = [...new Set(rows.flatMap((r) => (r.due ? [r.due] : [])))];
  const counts = {
    tasks: rows.length,
    archived: rows.filter((r) => r.archived).length,
    blocked: blocked.size,
    links: deps.length,
    noPriority: rows.filter((r) => r.priority === null).length,
    noDue: rows.filter((r) => r.due === null).length,
    withParent: rows.filter((r) => r.parent).length,
  };
  console.log(`search property: seed ${SEED} (replay: SEARCH_SEED=${SEED}); data ${JSON.stringify(counts)}`);
}

// ---------------------------------------------------------------------------------------------
// Generators, drawing values from the data so that filters hit

const OFFSETS = [0, 0, 120, -300, 330];
const instant = () =>
  fc.tuple(fc.constantFrom(...instantsMs), fc.constantFrom(-1, 0, 0, 1), fc.constantFrom(...OFFSETS)).map(([ms, d, off]) => rfc3339(ms + d, off));
const day = () => fc.tuple(fc.constantFrom(...dueDays), fc.constantFrom(-1, 0, 0, 1)).map(([d, k]) => utcDay(Date.parse(`${d}T00:00:00Z`) + k * DAY_MS));
/** A due date value: a day, or a date-time at, just before or just after a due day's 00:00 UTC. */
const dueValue = () =>
  fc.oneof(
    day(),
    fc
      .tuple(fc.constantFrom(...dueDays), fc.constantFrom(-1, 0, 1, 3_600_000), fc.constantFrom(...OFFSETS))
      .map(([d, ms, off]) => rfc3339(Date.parse(`${d}T00:00:00Z`) + ms, off)),
  );
const queryWord = fc
  .constantFrom(...VOCABULARY, ...QUERY_EXTRA)
  .chain((w) => fc.constantFrom(w, fold(w), w.toUpperCase()))
  .filter((w) => !w.startsWith("-"));
const query = fc.oneof(
  { weight: 3, arbitrary: queryWord },
  { weight: 1, arbitrary: fc.tuple(queryWord, queryWord).map(([a, b]) => `${a} ${b}`) },
  { weight: 1, arbitrary: fc.tuple(queryWord, queryWord).map(([a, b]) => `${a} or ${b}`) },
  { weight: 1, arbitrary: fc.tuple(queryWord, queryWord).map(([a, b]) => `${a} -${b}`) },
);
const titlePart = () =>
  fc.tuple(fc.constantFrom(...titles), fc.nat(), fc.integer({ min: 1, max: 12 }), fc.constantFrom("same", "upper", "lower")).map(([t, s, l, c]) => {
    const start = s % t.length;
    const part = t.slice(start, start + l);
    return c === "upper" ? part.toUpperCase() : c === "lower" ? part.toLowerCase() : part;
  });

function cond<T>(field: string, op: string, value: fc.Arbitrary<T>): fc.Arbitrary<Cond> {
  return value.map((v) => ({ field, op, value: v }));
}
function ops<T>(field: string, list: string[], value: () => fc.Arbitrary<T>, many?: () => fc.Arbitrary<T[]>): fc.Arbitrary<Cond>[] {
  return list.map((op) => {
    if (op === "is_null") return cond(field, op, fc.boolean());
    if (op === "in" || op === "nin") return cond(field, op, must(many, `a list for ${field} ${op}`)());
    return cond(field, op, value());
  });
}

function conditions(): fc.Arbitrary<Cond> {
  const list =
    <T>(xs: readonly T[]) =>
    () =>
      fc.subarray([...xs], { minLength: 1, maxLength: 4 });
  const projectIds = [...projects, "prj_NoSuchProject000000001"];
  const parentIds = [...parents.slice(0, 12), "T-999999", "T-2000"];
  const eqs = ["eq", "neq", "lt", "lte", "gt", "gte"];
  const all = [
    ...ops("status", ["eq", "neq", "in", "nin"], () => fc.constantFrom(...STATUSES), list(STATUSES)),
    ...ops("priority", ["eq", "neq", "in", "nin", "is_null"], () => fc.constantFrom(...PRIORITIES), list(PRIORITIES)),
    ...ops("project_id", ["eq", "neq", "in", "nin", "is_null"], () => fc.constantFrom(...projectIds), list(projectIds)),
    ...ops("parent_task_id", ["eq", "neq", "in", "nin", "is_null"], () => fc.constantFrom(...parentIds), list(parentIds)),
    ...ops("archived", ["eq", "neq"], () => fc.boolean()),
    ...ops("is_blocked", ["eq", "neq"], () => fc.boolean()),
    ...ops("due_date", [...eqs, "is_null"], dueValue),
    ...ops("created_at", ["lt", "lte", "gt", "gte"], instant),
    ...ops("updated_at", ["lt", "lte", "gt", "gte"], instant),
    ...ops("story_points", [...eqs, "in", "nin", "is_null"], () => fc.constantFrom(...POINTS, 4), list([...POINTS, 4])),
    ...ops("title", ["eq", "neq"], () => fc.constantFrom(...titles, "No such title")),
    ...ops("title", ["contains"], titlePart),
    ...ops("text", ["matches"], () => query),
  ];
  return fc.oneof(...all);
}

function filterTree(depth: number, leaf: fc.Arbitrary<Cond>): fc.Arbitrary<Filter> {
  if (depth <= 1) return leaf;
  const inner = filterTree(depth - 1, leaf);
  const items = fc.array(inner, { minLength: 1, maxLength: 3 });
  return fc.oneof(
    { weight: 2, arbitrary: leaf },
    { weight: 2, arbitrary: items.map((and) => ({ and })) },
    { weight: 2, arbitrary: items.map((or) => ({ or })) },
    { weight: 1, arbitrary: inner.map((not) => ({ not })) },
  );
}

const sortArb = fc.option(
  fc.tuple(fc.constantFrom(...SORT_FIELDS), fc.boolean()).map(([s, d]) => (d ? `-${s}` : s)),
  { nil: undefined, freq: 4 },
);

// ---------------------------------------------------------------------------------------------
// Walking pages

/** Every page of one search or list, following next_cursor; checks each page's shape and rows. */
async function walk(what: string, limit: number, fetchPage: (after: string | undefined) => Promise<{ status: number; text: string; body: unknown }>) {
  const ids: string[] = [];
  let after: string | undefined;
  for (let pages = 0; ; pages++) {
    if (pages > 400) throw new Error(`${what}: more than 400 pages`);
    const r = await fetchPage(after);
    if (r.status !== 200) throw new Error(`${what}${after ? " (a later page)" : ""}: ${r.status} ${r.text}`);
    const page = r.body as { data: Task[]; has_more: boolean; next_cursor: string | null };
    if (page.data.length > limit) throw new Error(`${what}: a page of ${page.data.length} rows over limit ${limit}`);
    for (const t of page.data) {
      const known = rowById.get(t.id);
      if (!known || JSON.stringify(known.task) !== JSON.stringify(t)) throw new Error(`${what}: row ${JSON.stringify(t)} is not the task as listed`);
      ids.push(t.id);
    }
    if (!page.has_more) return ids;
    if (page.data.length === 0 || typeof page.next_cursor !== "string") throw new Error(`${what}: has_more with ${r.text}`);
    after = page.next_cursor;
  }
}

/** A page size from the draw, raised where walking the result would take more than 12 pages (the run's time). */
const pageSize = (drawn: number, expected: number) => Math.min(100, Math.max(drawn, Math.ceil(expected / 12)));

describe("task search against an oracle", () => {
  beforeAll(seed, 120_000);

  it("when every task is listed page by page (GET /v1/tasks?limit=100, archived and not), then each appears exactly once", () => {
    const wrong = rows.filter((r) => listed.get(r.id) !== 1).map((r) => `${r.id} (listed ${listed.get(r.id) ?? 0} times, updated_at ${r.task.updated_at})`);
    expect(wrong, "tasks the default listing lost or repeated").toEqual([]);
  });

  it("when random filter trees, sorts and page sizes are searched and every page walked, then the ids are the oracle's, in order", async () => {
    const leaf = conditions();
    const body = fc.record({ filter: fc.option(filterTree(4, leaf), { nil: undefined, freq: 8 }), sort: sortArb, limit: fc.integer({ min: 7, max: 40 }) });
    let hits = 0;
    await fc.assert(
      fc.asyncProperty(body, async (drawn) => {
        const { filter, sort } = drawn;
        const scope = filter && namesArchived(filter) ? rows : rows.filter((r) => !r.archived);
        const want = sorted(
          scope.filter((r) => (filter ? evaluate(filter, r) : true)),
          sort,
        );
        if (want.length > 0) hits++;
        const limit = pageSize(drawn.limit, want.length);
        // A search names its filter: none drawn is every current task, as the oracle's scope says.
        const req: SearchBody = { filter: filter ?? { field: "archived", op: "eq", value: false }, ...(sort ? { sort } : {}), limit };
        const got = await walk(`POST /v1/tasks/search ${JSON.stringify(req)}`, limit, (after) =>
          gw.post("/v1/tasks/search", after ? { ...req, after } : req, { token: token() }),
        );
        expectSame(`POST /v1/tasks/search ${JSON.stringify(req)}`, got, want);
      }),
      { seed: SEED, numRuns: 70, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
    );
    // Most draws must find something, or the property says little.
    expect(hits).toBeGreaterThan(35);
  }, 300_000);

  it("when random GET /v1/tasks query parameters are listed and every page walked, then the ids are the oracle's, in order", async () => {
    const csv = <T extends string>(xs: readonly T[]) => fc.subarray([...xs], { minLength: 1, maxLength: 3 }).map((a) => a.join(","));
    const dueBound = fc.oneof(
      day(),
      fc
        .tuple(day(), fc.integer({ min: 0, max: 23 }), fc.constantFrom(...OFFSETS))
        .map(([d, h, off]) => rfc3339(Date.parse(`${d}T00:00:00Z`) + h * 3_600_000, off)),
    );
    const every = fc.record({
      status: csv(STATUSES),
      priority: csv(PRIORITIES),
      created_gte: instant(),
      created_lt: instant(),
      updated_gte: instant(),
      updated_lt: instant(),
      due_gte: dueBound,
      due_lt: dueBound,
      is_blocked: fc.boolean(),
      q: queryWord,
      project_id: fc.constantFrom(...projects),
      parent_task_id: fc.constantFrom(...parents.slice(0, 12)),
      archived: fc.boolean(),
      sort: fc.constantFrom(...SORT_FIELDS).chain((s) => fc.constantFrom(s, `-${s}`)),
    });
    // A few parameters at a time (each one narrows the list), so that most draws find tasks.
    type Params = Partial<typeof every extends fc.Arbitrary<infer P> ? P : never>;
    const names = [
      "status",
      "priority",
      "created_gte",
      "created_lt",
      "updated_gte",
      "updated_lt",
      "due_gte",
      "due_lt",
      "is_blocked",
      "q",
      "project_id",
      "parent_task_id",
      "archived",
    ] as const;
    const params = fc
      .tuple(every, fc.subarray([...names], { minLength: 0, maxLength: 3 }), fc.boolean())
      .map(([all, keys, sorting]): Params => ({ ...Object.fromEntries(keys.map((k) => [k, all[k]])), ...(sorting ? { sort: all.sort } : {}) }));
    const query = fc.tuple(params, fc.integer({ min: 7, max: 40 }));
    let hits = 0;
    await fc.assert(
      fc.asyncProperty(query, async ([p, drawnLimit]) => {
        const us = (v: string) => Date.parse(v) * 1000;
        const want = sorted(
          rows.filter(
            (r) =>
              r.archived === (p.archived ?? false) &&
              (p.status === undefined || p.status.split(",").includes(r.status)) &&
              (p.priority === undefined || (r.priority !== null && p.priority.split(",").includes(r.priority))) &&
              (p.created_gte === undefined || r.createdUs >= us(p.created_gte)) &&
              (p.created_lt === undefined || r.createdUs < us(p.created_lt)) &&
              (p.updated_gte === undefined || r.updatedUs >= us(p.updated_gte)) &&
              (p.updated_lt === undefined || r.updatedUs < us(p.updated_lt)) &&
              (p.due_gte === undefined || (r.due !== null && instantMs(r.due) >= instantMs(p.due_gte))) &&
              (p.due_lt === undefined || (r.due !== null && instantMs(r.due) < instantMs(p.due_lt))) &&
              (p.is_blocked === undefined || r.blocked === p.is_blocked) &&
              (p.q === undefined || textMatches(p.q, r)) &&
              (p.project_id === undefined || r.projects.includes(p.project_id)) &&
              (p.parent_task_id === undefined || r.parent === p.parent_task_id),
          ),
          p.sort,
        );
        if (want.length > 0) hits++;
        const limit = pageSize(drawnLimit, want.length);
        const qs = new URLSearchParams({ ...Object.fromEntries(Object.entries(p).map(([k, v]) => [k, String(v)])), limit: String(limit) });
        const what = `GET /v1/tasks?${qs}`;
        const got = await walk(what, limit, (after) => gw.get(`/v1/tasks?${qs}${after ? `&after=${encodeURIComponent(after)}` : ""}`, { token: token() }));
        expectSame(what, got, want);
      }),
      { seed: SEED + 1, numRuns: 40, interruptAfterTimeLimit: 90_000, markInterruptAsFailure: true },
    );
    expect(hits).toBeGreaterThan(20);
  }, 200_000);
});
