// Search scenarios of the benchmark (BENCH_ONLY=search), run by run.mjs on its stack.
//
// Two organizations seeded by SQL from one generator, 10,000 and 1,000,000 tasks (BENCH_SEARCH_SIZES
// changes them), each with an API key made by the admin CLI like the bench's own tenant, and 20
// members: the key's user and 19 more. Each task has 0-3 of them as assignees (a fifth none, the
// key's user on about 5%) and one of them as owner (the key's user on about 5%); each owner and
// assignee follows the task. Each organization also has 20 labels and 10 custom fields (rows
// written directly): each task carries 0-3 labels (a fifth none, the first label on about 5%) and
// values for most fields. Every scenario runs at both sizes, at 16 connections, beside the plain
// list page as the baseline:
//   - a filtered and sorted page: status and priority lists, by due date descending;
//   - a full-text page: `q` with a rare word planted in 50 tasks of each organization, so the answer
//     is the same size at both scales and only the table around it grows;
//   - POST /v1/tasks/search with the filter tree equal to each of those;
//   - people: assigned to me (alone, and with status lists by due date), owned by me, assigned to
//     nobody, and the search tree's `assignee_ids contains me`;
//   - labels and custom fields: a label on about 5% of the tasks (the search tree's `contains` and
//     GET's `label_id`), a select option on about 5% (`eq`), and a number range holding about 5%,
//     sorted by that number and by the last change.
// Reported against the targets (asserted nowhere): p99 ≤ 50 ms at 1M, and 1M within 1.5× of 10k.
// Each is first sent once alone (its latency is shown): one that fails alone is reported, not
// loaded. After each, the service's list statements still running are waited for (cancelled past
// 60 s), so that no scenario measures the tail of the one before.
//
// The plans: after the measurements, auto_explain (contrib, loaded per session) is switched on for
// the bench database alone, the tasks service's connections are renewed so they load it, and each
// scenario is sent a few times in a row at 1M. The server log then holds EXPLAIN (ANALYZE, BUFFERS)
// of the very statement the service ran, with the plan its statement cache chose (a prepared
// statement may switch to a generic plan after five runs), which a copy of the SQL would not show.
// A statement the service cancels at its limit logs no plan: for the scenarios that say how, the
// service's own search statement (its repository, from the package) is then run once outside the
// service, without a time limit, and that plan is shown instead.
import { closeSync, openSync, readlinkSync, readSync, statSync } from "node:fs";
import postgres from "postgres";

const CONNECTIONS = 16;
const SIZES = (process.env.BENCH_SEARCH_SIZES ?? "10000,1000000").split(",").map(Number);
/** BENCH_SEARCH_ONLY: comma-separated parts of scenario names to run (the baseline always runs). */
const ONLY = process.env.BENCH_SEARCH_ONLY?.split(",").filter(Boolean);
/** The rare word: its letters are outside the generated words' alphabet, so only planted tasks have it. */
export const NEEDLE = "quartzyx";
const NEEDLES = 50;
const VOCABULARY = 4000;
/** Members of each seeded organization, the key's own user first. */
const MEMBERS = 20;
// Accented words among the generated ones, so that unaccent has something to fold.
const ACCENTED = (
  "résumé café naïve crème brûlée façade déjà über señor piñata jalapeño élan fiancée protégé soirée touché entrée château " +
  "garçon smörgåsbord zürich são münchen kraków ångström øresund málaga córdoba bogotá reykjavík español français größe " +
  "straße mañana niño açaí pâté rôle hôtel forêt noël zoë chloé renée andré josé maría müller björn søren łódź dvořák škoda"
).split(" ");

/** Labels and custom fields of each seeded organization; the first label and the first `customer` option are on about 5% of the tasks. */
const LABELS = 20;
export const FIELDS = [
  { key: "customer", name: "Customer", type: "select", options: 20 },
  { key: "tags", name: "Tags", type: "multi_select", options: 10 },
  { key: "estimate", name: "Estimate", type: "number" },
  { key: "release", name: "Release", type: "date" },
  { key: "reviewer", name: "Reviewer", type: "user" },
  { key: "done", name: "Done", type: "checkbox" },
  { key: "link", name: "Link", type: "url" },
  { key: "summary", name: "Summary", type: "text" },
  { key: "score", name: "Score", type: "number" },
  { key: "due_week", name: "Due week", type: "date" },
];
/** `estimate` is on 80% of the tasks, spread evenly over 0-160: at least 150 on 5% of them. */
const ESTIMATE_BOUND = 150;
// Row ids are tagged with the size, or with `tag` for another scenario's organization of the same size (exports.mjs).
const tagOf = (t) => t.tag ?? t.size;
const labelIds = (t) => Array.from({ length: LABELS }, (_, i) => `lbl_bench_${tagOf(t)}_${i + 1}`);
const optionIds = (t, f) => Array.from({ length: FIELDS[f - 1].options ?? 0 }, (_, i) => `opt_bench_${tagOf(t)}_${f}_${i + 1}`);

const FILTER_TREE = {
  and: [
    { field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] },
    { field: "priority", op: "in", value: ["HIGH", "URGENT"] },
  ],
};

/** The scenarios: tool-neutral requests, as run.mjs's SCENARIOS. */
const SCENARIOS = [
  { name: "GET /v1/tasks?limit=25 (baseline)", method: "GET", path: "/v1/tasks?limit=25" },
  { name: "GET filter + sort=-due_date", method: "GET", path: "/v1/tasks?status=TODO,IN_PROGRESS&priority=HIGH,URGENT&sort=-due_date&limit=25" },
  { name: "GET q=<rare word>", method: "GET", path: `/v1/tasks?q=${NEEDLE}&limit=25` },
  { name: "POST search, same filter + sort", method: "POST", path: "/v1/tasks/search", body: { filter: FILTER_TREE, sort: "-due_date", limit: 25 } },
  { name: "POST search, text matches", method: "POST", path: "/v1/tasks/search", body: { filter: { field: "text", op: "matches", value: NEEDLE }, limit: 25 } },
  { name: "GET assignee_id=me (assigned to me)", method: "GET", path: "/v1/tasks?assignee_id=me&limit=25" },
  { name: "GET assignee_id=me + status, sort=-due_date", method: "GET", path: "/v1/tasks?assignee_id=me&status=TODO,IN_PROGRESS&sort=-due_date&limit=25" },
  { name: "GET owner_id=me", method: "GET", path: "/v1/tasks?owner_id=me&limit=25" },
  { name: "GET assignee_id=none", method: "GET", path: "/v1/tasks?assignee_id=none&limit=25" },
  {
    name: "POST search, assignee_ids contains me",
    method: "POST",
    path: "/v1/tasks/search",
    body: { filter: { field: "assignee_ids", op: "contains", value: "me" }, limit: 25 },
  },
  {
    name: "POST search, label_ids contains <label on 5%>",
    method: "POST",
    path: "/v1/tasks/search",
    body: (t) => ({ filter: { field: "label_ids", op: "contains", value: t.refs.label }, limit: 25 }),
  },
  { name: "GET label_id=<label on 5%>", method: "GET", path: (t) => `/v1/tasks?label_id=${t.refs.label}&limit=25` },
  {
    name: "POST search, custom.customer eq <option on 5%>",
    method: "POST",
    path: "/v1/tasks/search",
    body: (t) => ({ filter: { field: "custom.customer", op: "eq", value: t.refs.customer }, limit: 25 }),
    direct: (t) => ({ filter: { field: "custom.customer", op: "eq", value: t.refs.customer, type: "select" }, sort: "-updated_at" }),
  },
  {
    name: `POST search, custom.estimate gte ${ESTIMATE_BOUND}, sort=custom.estimate`,
    method: "POST",
    path: "/v1/tasks/search",
    body: { filter: { field: "custom.estimate", op: "gte", value: ESTIMATE_BOUND }, sort: "custom.estimate", limit: 25 },
    direct: () => ({
      filter: { field: "custom.estimate", op: "gte", value: ESTIMATE_BOUND, type: "number" },
      sort: "custom.estimate",
      sortType: "number",
    }),
  },
  {
    name: `POST search, custom.estimate gte ${ESTIMATE_BOUND}, sort=-updated_at`,
    method: "POST",
    path: "/v1/tasks/search",
    body: { filter: { field: "custom.estimate", op: "gte", value: ESTIMATE_BOUND }, sort: "-updated_at", limit: 25 },
    direct: () => ({ filter: { field: "custom.estimate", op: "gte", value: ESTIMATE_BOUND, type: "number" }, sort: "-updated_at" }),
  },
];

/** A scenario's path or body: a value, or a function of the tenant (its label and option ids). */
const resolve = (v, t) => (typeof v === "function" ? v(t) : v);
const toRequest = (s, t) => {
  const body = resolve(s.body, t);
  return {
    method: s.method,
    path: resolve(s.path, t),
    headers: { authorization: `Bearer ${t.key}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  };
};

/**
 * Creates the organizations, seeds them, measures every scenario at every size (sizes alternating,
 * so both see the machine alike), then captures the plans at the largest size.
 * `admin(...args)` is run.mjs's admin CLI; `measure(name, req, connections)` its warm-up + wrk run.
 */
const chosen = () => (ONLY === undefined ? SCENARIOS : SCENARIOS.filter((s, i) => i === 0 || ONLY.some((o) => s.name.includes(o))));

export async function searchScenarios({ databaseUrl, gateway, admin, measure, log }) {
  const tenants = SIZES.map((size) => {
    const t = admin("bootstrap", "--org", `Search ${size}`, "--plan", "team", "--email", `search-${size}@example.test`);
    admin("set-limits", "--org", t.organization_id, "--burst", "1000000000", "--quota", "2000000000");
    const tenant = { size, key: t.api_key, org: t.organization_id, user: t.user_id };
    return { ...tenant, refs: { label: labelIds(tenant)[0], customer: optionIds(tenant, 1)[0] } };
  });
  const seeding = await seedSearchData(databaseUrl, tenants, log);
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const rows = [];
  try {
    for (const s of chosen()) {
      const row = { name: s.name, at: {} };
      for (const t of tenants) {
        const req = toRequest(s, t);
        // One request alone first: a scenario that fails (a 503 when the statement outlasts the
        // gateway's RPC timeout) is reported as such, not loaded for 12 s.
        const page = await probe(gateway, req);
        let r = { rps: Number.NaN, p50: Number.NaN, p99: Number.NaN, non2xx: 0, errors: 0 };
        if (page.status === 200) r = await measure(`search: ${s.name} @ ${t.size}`, req, CONNECTIONS);
        else log(`search: ${s.name} @ ${t.size} answered ${page.status} alone; not measured`);
        const backlog = await settle(sql, log);
        row.at[t.size] = { ...r, page, backlog };
      }
      rows.push(row);
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
  const largest = tenants.at(-1);
  let plans;
  try {
    plans = await capturePlans({ databaseUrl, gateway, tenant: largest, log });
  } catch (e) {
    plans = { error: String(e?.message ?? e) };
  }
  return { connections: CONNECTIONS, sizes: SIZES, seeding, rows, plans, largest: largest.size };
}

/** The tasks service's list and search statements still running (the `as reencode` column is theirs). */
const RUNNING = (sql) => sql`
  select pid from pg_stat_activity
  where datname = current_database() and application_name like 'tasksvc-tasks-%' and state = 'active' and query like '%as reencode%'`;

/**
 * Waits until the tasks service runs no list or search statement, so the next scenario does not
 * measure this one's tail: the service goes on with requests whose RPC the gateway gave up on.
 * Past `waitMs` what still runs is cancelled, again until quiet (at most 2 min in all). Answers
 * how many statements were cancelled.
 */
async function settle(sql, log, waitMs = 60_000) {
  const started = Date.now();
  let cancelled = 0;
  let quietSince = Date.now();
  while (Date.now() - started < 120_000) {
    const running = await RUNNING(sql);
    if (running.length > 0) quietSince = Date.now();
    else if (Date.now() - quietSince >= 1000) break;
    if (running.length > 0 && Date.now() - started > waitMs) {
      for (const r of running) await sql`select pg_cancel_backend(${r.pid})`;
      cancelled += running.length;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (cancelled > 0) log(`search: cancelled ${cancelled} statements still running after ${waitMs / 1000} s`);
  return cancelled;
}

/** One request before measuring: the status and how many tasks the page holds (a 4xx/5xx is shown, not thrown). */
async function probe(gateway, req) {
  const t0 = performance.now();
  const r = await fetch(`${gateway}${req.path}`, { method: req.method, headers: req.headers, body: req.body });
  const text = await r.text();
  const ms = performance.now() - t0;
  if (r.status !== 200) return { status: r.status, ms, detail: text.slice(0, 300) };
  const body = JSON.parse(text);
  return { status: 200, ms, tasks: body.data?.length, has_more: body.has_more };
}

// ---------- seeding ----------

/**
 * Seeds each tenant's organization with its members and `size` tasks, set-based. The secondary
 * indexes of the task and follower tables (whatever the migrations and the service made) are
 * dropped first and rebuilt after the inserts, from their own definitions: building an index once
 * is far cheaper than a million inserts into it (the GIN indexes above all). Foreign-key triggers
 * are skipped (session_replication_role) since every version and follower row points at a task
 * inserted just before. Returns the phases' durations in seconds.
 */
export async function seedSearchData(databaseUrl, tenants, log = () => {}) {
  const t0 = performance.now();
  const lap = (() => {
    let last = t0;
    return () => {
      const now = performance.now();
      const s = (now - last) / 1000;
      last = now;
      return s;
    };
  })();
  // Two connections, one per core: inserts, index builds and vacuums run two at a time.
  const lanes = [0, 1].map(() => postgres(databaseUrl, { max: 1, onnotice: () => {} }));
  const [sql] = lanes;
  try {
    await waitForIndexBuilds(sql);
    const members = [];
    for (const t of tenants) members.push(await addMembers(sql, t));
    for (const t of tenants) await addDefinitions(sql, t);
    for (const l of lanes) {
      await l`set session_replication_role = replica`;
      await l`set maintenance_work_mem = '1GB'`;
      await l`set synchronous_commit = off`;
      await makeWordPools(l);
    }
    const indexes = await sql`
      select c.relname as name, pg_get_indexdef(i.indexrelid) as def, i.indexrelid::regclass::text as qualified
      from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam
      where i.indrelid in ('tasks.tasks'::regclass, 'tasks.task_followers'::regclass, 'tasks.task_sort_values'::regclass)
        and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
      order by a.amname = 'btree', c.relname`;
    for (const ix of indexes) await sql.unsafe(`drop index ${ix.qualified}`);
    const prepared = lap();
    // Each organization in two halves of its numbers, each half with a seed of its own.
    const halves = tenants.flatMap((t, i) => {
      const mid = Math.floor(t.size / 2);
      return [
        { ...t, members: members[i], from: 1, to: mid, seed: 0.17 },
        { ...t, members: members[i], from: mid + 1, to: t.size, seed: 0.29 },
      ];
    });
    log(`search: seeding ${tenants.map((t) => t.size.toLocaleString("en-US")).join(" + ")} tasks by SQL …`);
    await inLanes(
      lanes,
      halves.map((h) => (l) => insertTasks(l, h)),
    );
    await inLanes(
      lanes,
      halves.map((h) => (l) => insertVersions(l, h)),
    );
    const tasksAndVersions = lap();
    await inLanes(
      lanes,
      halves.map((h) => (l) => insertFollowers(l, h)),
    );
    await inLanes(
      lanes,
      halves.map((h) => (l) => insertSortValues(l, h)),
    );
    const followers = lap();
    for (const t of tenants) {
      await sql`
        insert into tasks.org_counters (organization_id, last_number) values (${t.org}, ${t.size})
        on conflict (organization_id) do update set last_number = excluded.last_number`;
    }
    const inserted = tasksAndVersions + followers + lap();
    log(`search: rebuilding ${indexes.length} indexes …`);
    // Non-btree (GIN) first: the longest builds, which cannot use parallel workers.
    await inLanes(
      lanes,
      indexes.map((ix) => (l) => l.unsafe(ix.def)),
    );
    // What the service does once an index is built (a statistics target), lost with the drop.
    const { TASK_INDEXES } = await import("@tasksvc/tasks");
    const [first] = lanes;
    await first`set search_path to tasks`;
    for (const ix of TASK_INDEXES) if (ix.afterBuild) await first.unsafe(ix.afterBuild);
    await first`reset search_path`;
    const indexed = lap();
    for (const l of lanes) await l`reset session_replication_role`;
    await inLanes(
      lanes,
      ["tasks.tasks", "tasks.task_versions", "tasks.task_followers", "tasks.task_sort_values", "tasks.org_counters", "tasks.labels", "tasks.custom_fields"].map(
        (t) => (l) => l.unsafe(`vacuum analyze ${t}`),
      ),
    );
    const vacuumed = lap();
    const [{ size }] = await sql`select pg_size_pretty(pg_total_relation_size('tasks.tasks')) as size`;
    const total = (performance.now() - t0) / 1000;
    log(`search: seeded in ${total.toFixed(1)} s (tasks table with its indexes: ${size})`);
    return {
      total,
      prepared,
      inserted,
      followers,
      indexed,
      vacuumed,
      members: MEMBERS,
      labels: LABELS,
      fields: FIELDS.length,
      indexes: indexes.map((i) => i.name),
      tableSize: size,
    };
  } finally {
    await Promise.all(lanes.map((l) => l.end({ timeout: 1 })));
  }
}

/**
 * The organization's members: its key's user and MEMBERS - 1 more, written into the keys service's
 * tables as the admin CLI's add-user writes them, without the key it mints each (a process per user
 * would add seconds and keys no request uses). Answers their ids, the key's user first.
 */
async function addMembers(sql, t) {
  const added = await sql`
    with u as (
      insert into keys.users (id, email)
      select 'usr_' || substr(md5(${t.org} || '-' || i), 1, 22), 'member-' || i || '-' || lower(${t.org}) || '@example.test'
      from generate_series(1, ${MEMBERS - 1}) i
      returning id
    )
    insert into keys.memberships (organization_id, user_id, role) select ${t.org}, id, 'member' from u
    returning user_id`;
  return [t.user, ...added.map((r) => r.user_id).sort()];
}

/**
 * The organization's labels and custom field definitions, written into the tasks service's tables
 * as its create routes write them (ids of the bench's own, options with ids, a color each).
 */
async function addDefinitions(sql, t) {
  const colors = ["#1d76db", "#0e8a16", "#d93f0b", "#fbca04", "#5319e7"];
  const labels = labelIds(t).map((id, i) => ({ id, organization_id: t.org, name: `Label ${i + 1}`, color: colors[i % colors.length] }));
  await sql`insert into tasks.labels ${sql(labels)}`;
  const fields = FIELDS.map((f, i) => ({
    id: `fld_bench_${tagOf(t)}_${i + 1}`,
    organization_id: t.org,
    key: f.key,
    name: f.name,
    type: f.type,
    options: sql.json(optionIds(t, i + 1).map((id, j) => ({ id, name: `${f.name} ${j + 1}`, color: colors[j % colors.length] }))),
  }));
  await sql`insert into tasks.custom_fields ${sql(fields)}`;
}

/** Runs the jobs in order, each on the first lane free. */
async function inLanes(lanes, jobs) {
  let next = 0;
  await Promise.all(
    lanes.map(async (l) => {
      while (next < jobs.length) await jobs[next++](l);
    }),
  );
}

/** The service builds some indexes concurrently after its migrations: they must be done before they are dropped. */
async function waitForIndexBuilds(sql) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [{ busy }] = await sql`
      select (select count(*) from pg_stat_progress_create_index where datname = current_database())::int
        + (select count(*) from pg_index where indrelid = 'tasks.tasks'::regclass and not indisvalid)::int as busy`;
    if (busy === 0) return;
    if (Date.now() > deadline) throw new Error("the tasks service's index builds did not finish within 2 minutes");
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Pseudo words (md5 mapped onto 16 letters, 4–9 long; one in fifty accented), then pools of short
 * (2–4 words) and long (6–14 words) pieces drawn from them with a Zipf-like skew, so a few words
 * are common and most are rare. A task's text is pieces joined (cheap per row, varied as a whole).
 */
async function makeWordPools(sql) {
  await sql`
    create temp table bench_vocab as
    select i, case when i % 50 = 0 then (${ACCENTED}::text[])[1 + (i / 50) % ${ACCENTED.length}]
                   else translate(substr(md5('w' || i), 1, 4 + i % 6), '0123456789abcdef', 'aeioubcdfghklmnp') end as w
    from generate_series(1, ${VOCABULARY}) i`;
  await sql`create unique index on bench_vocab (i)`;
  const pool = (name, size, min, spread) =>
    sql.unsafe(`
      create temp table ${name} as
      with k as materialized (
        select p.i, k.k, 1 + floor(${VOCABULARY} * power(random(), 3))::int as wi
        from generate_series(0, ${size - 1}) p(i), generate_series(1, ${min + spread}) k(k)
        where k.k <= ${min} + (p.i * 7) % ${spread + 1}
      )
      select k.i, string_agg(v.w, ' ' order by k.k) as s from k join bench_vocab v on v.i = k.wi group by k.i`);
  await sql`select setseed(0.42)`;
  await pool("bench_short", 10007, 2, 2);
  await pool("bench_long", 10009, 6, 8);
  await sql`analyze bench_short`;
  await sql`analyze bench_long`;
}

/**
 * Tasks `from`..`to` of one organization, from the generator (its seed per range). Needle tasks:
 * every (size / 50)-th, never archived, the rare word in the title of half of them and in the
 * description of the others. People: the owner is the key's user (members[0]) one time in 20, else
 * one of the others; 0-3 assignees (none 20%, one 35%, two 30%, three 15%), the key's user among
 * them on 5% of tasks, the others distinct, walking the 19 others (a prime) from a random start by a
 * random step. Labels the same way: 0-3 (as many as assignees would be), the first label on 5% of
 * tasks, the others walked from the 19 others. Custom field values, each present on a share of the
 * tasks and drawn from the same random number below that share: `customer` on 90% (its first option
 * on 5%, the 19 others evenly), `tags` 1-3 distinct of 10 options on 60%, `estimate` 0-160 with one
 * decimal on 80%, `release` a day within 540 on 70%, `reviewer` a member on 50%, `done` on 70% (half
 * true), `link` on 40%, `summary` a few words on 60%, `score` 0-99 on 75%, `due_week` a Monday on 50%.
 */
async function insertTasks(sql, t) {
  const { org, members, size, from, to, seed } = t;
  const step = Math.floor(size / NEEDLES);
  const others = MEMBERS - 1;
  const ASSIGNEES = sql.unsafe("(case when g.r_asg < 0.20 then 0 when g.r_asg < 0.55 then 1 when g.r_asg < 0.85 then 2 else 3 end)");
  // 1/16 of the 80% assigned: the key's user on 5% of all tasks.
  const ME = sql.unsafe("(g.r_asg >= 0.20 and g.r_me < 0.0625)");
  const LABEL_COUNT = sql.unsafe("(case when g.r_lbl < 0.20 then 0 when g.r_lbl < 0.55 then 1 when g.r_lbl < 0.85 then 2 else 3 end)");
  // 1/16 of the 80% labelled: the first label on 5% of all tasks.
  const FIRST = sql.unsafe("(g.r_lbl >= 0.20 and g.r_l1 < 0.0625)");
  const customer = optionIds(t, 1);
  const tags = optionIds(t, 2);
  await sql`select setseed(${seed})`;
  await sql`
    insert into tasks.tasks (organization_id, number, owner_user_id, assignee_ids, label_ids, custom_fields, current_version_id, version_count,
      title, description, status, priority, due_date, due_soon_sent, due_overdue_sent, notes, story_points, created_at, updated_at, archived, archived_at)
    select ${org}, g.n,
      case when g.r_own < 0.05 then m.ids[1] else m.ids[2 + floor(g.v_own * ${others})::int] end,
      (case when ${ME} then array[m.ids[1]] else '{}'::text[] end)
        || (array[m.ids[2 + g.o], m.ids[2 + (g.o + g.s) % ${others}], m.ids[2 + (g.o + 2 * g.s) % ${others}]])[1:${ASSIGNEES} - (${ME})::int],
      (case when ${FIRST} then array[lb.ids[1]] else '{}'::text[] end)
        || (array[lb.ids[2 + g.lo], lb.ids[2 + (g.lo + g.ls) % ${LABELS - 1}], lb.ids[2 + (g.lo + 2 * g.ls) % ${LABELS - 1}]])[1:${LABEL_COUNT} - (${FIRST})::int],
      jsonb_strip_nulls(jsonb_build_object(
        'customer', case when g.r_cust < 0.05 then cu.ids[1] when g.r_cust < 0.90 then cu.ids[2 + floor((g.r_cust - 0.05) / 0.85 * 19)::int] end,
        'tags', case when g.r_tags < 0.60 then to_jsonb((array[tg.ids[1 + g.tg_o], tg.ids[1 + (g.tg_o + g.tg_s) % 10], tg.ids[1 + (g.tg_o + 2 * g.tg_s) % 10]])[1:1 + floor(g.r_tags / 0.60 * 3)::int]) end,
        'estimate', case when g.r_est < 0.80 then round((g.r_est / 0.80 * 160)::numeric, 1) end,
        'release', case when g.r_rel < 0.70 then to_char(current_date - 180 + floor(g.r_rel / 0.70 * 540)::int, 'YYYY-MM-DD') end,
        'reviewer', case when g.r_rev < 0.50 then m.ids[1 + floor(g.r_rev / 0.50 * ${MEMBERS})::int] end,
        'done', case when g.r_done < 0.70 then g.r_done < 0.35 end,
        'link', case when g.r_link < 0.40 then 'https://example.test/issues/' || g.n end,
        'summary', case when g.r_sum < 0.60 then nt.s end,
        'score', case when g.r_score < 0.75 then floor(g.r_score / 0.75 * 100)::int end,
        'due_week', case when g.r_dw < 0.50 then to_char(date_trunc('week', current_date - 90 + floor(g.r_dw / 0.50 * 270)::int), 'YYYY-MM-DD') end
      )),
      'ver_bench_' || md5(${org} || g.n), 1,
      a.s || ' ' || b.s || case when g.needle and (g.n / ${step}) % 2 = 0 then ' ' || ${NEEDLE} else '' end,
      case when g.needle and (g.n / ${step}) % 2 = 1 then l1.s || ' ' || ${NEEDLE} || ' ' || l2.s
           when g.r_desc < 0.25 then null
           else l1.s || ' ' || l2.s || ' ' || l3.s end,
      case when g.r_status < 0.25 then 'TODO' when g.r_status < 0.40 then 'IN_PROGRESS' when g.r_status < 0.50 then 'IN_REVIEW'
           when g.r_status < 0.60 then 'BLOCKED' else 'COMPLETED' end,
      case when g.r_pri < 0.30 then null when g.r_pri < 0.50 then 'LOW' when g.r_pri < 0.75 then 'MEDIUM'
           when g.r_pri < 0.90 then 'HIGH' else 'URGENT' end,
      -- Each due date's events count as sent, as in an organization that has run for a while: the
      -- scheduler would otherwise send hundreds of thousands of task.overdue during the measurements.
      g.due, g.due, g.due,
      case when g.r_notes < 0.80 then null else nt.s end,
      case when g.r_sp < 0.35 then null else (array[0.5, 1, 2, 3, 5, 8, 13]::numeric[])[1 + floor(g.v_sp * 7)::int] end,
      g.created, g.created + g.r_upd * (now() - g.created),
      g.archived, case when g.archived then g.created + g.r_upd * (now() - g.created) end
    from (
      select n, n % ${step} = 0 and n / ${step} <= ${NEEDLES} as needle, random() as r_desc, random() as r_status,
        random() as r_pri, case when random() < 0.40 then null else (current_date - 365 + floor(random() * 730)::int)::timestamptz end as due, random() as r_notes, random() as r_sp, random() as v_sp,
        now() - random() * interval '730 days' as created, random() as r_upd,
        n % ${step} <> 0 and random() < 0.05 as archived,
        floor(random() * 10007)::int as ka, floor(random() * 10007)::int as kb, floor(random() * 10007)::int as kn,
        floor(random() * 10009)::int as k1, floor(random() * 10009)::int as k2, floor(random() * 10009)::int as k3,
        random() as r_own, random() as v_own, random() as r_asg, random() as r_me,
        floor(random() * ${others})::int as o, 1 + floor(random() * ${others - 1})::int as s,
        random() as r_lbl, random() as r_l1, floor(random() * ${LABELS - 1})::int as lo, 1 + floor(random() * ${LABELS - 2})::int as ls,
        random() as r_cust, random() as r_tags, floor(random() * 10)::int as tg_o, 1 + floor(random() * 4)::int as tg_s,
        random() as r_est, random() as r_rel, random() as r_rev, random() as r_done, random() as r_link, random() as r_sum,
        random() as r_score, random() as r_dw
      from generate_series(${from}::int, ${to}::int) n
    ) g
    cross join (select ${members}::text[] as ids) m
    cross join (select ${labelIds(t)}::text[] as ids) lb
    cross join (select ${customer}::text[] as ids) cu
    cross join (select ${tags}::text[] as ids) tg
    join bench_short a on a.i = g.ka
    join bench_short b on b.i = g.kb
    join bench_short nt on nt.i = g.kn
    join bench_long l1 on l1.i = g.k1
    join bench_long l2 on l2.i = g.k2
    join bench_long l3 on l3.i = g.k3`;
}

/** Each task's one version (seq 1), the task row's content as of its last change. */
async function insertVersions(sql, { org, from, to }) {
  await sql`
    insert into tasks.task_versions (id, organization_id, task_number, seq, title, description, status, priority, start_date,
      due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at)
    select current_version_id, organization_id, number, 1, title, description, status, priority, start_date,
      due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, updated_at
    from tasks.tasks where organization_id = ${org} and number between ${from} and ${to}`;
}

/** As the service makes them: the owner follows the task, and each assignee who is not its owner. */
async function insertFollowers(sql, { org, from, to }) {
  await sql`
    insert into tasks.task_followers (organization_id, task_number, user_id, reason, created_at)
    select t.organization_id, t.number, f.user_id, f.reason, t.created_at
    from tasks.tasks t
    cross join lateral (
      select t.owner_user_id, 'owner'
      union all
      select a, 'assignee' from unnest(t.assignee_ids) a where a <> t.owner_user_id
    ) f(user_id, reason)
    where t.organization_id = ${org} and t.number between ${from} and ${to}`;
}

/** As the service's trigger writes them (disabled while seeding), by the same function. */
async function insertSortValues(sql, { org, from, to }) {
  await sql`
    insert into tasks.task_sort_values
    select r.* from tasks.tasks t cross join lateral tasks.task_sort_rows(t.organization_id, t.number, t.custom_fields) r
    where t.organization_id = ${org} and t.number between ${from} and ${to}`;
}

// ---------- plans ----------

/** The server's log file: this session's stderr (the server's), as the kernel names it. */
function serverLog(pid) {
  const path = readlinkSync(`/proc/${pid}/fd/2`);
  if (!path.startsWith("/")) throw new Error(`the server logs to ${path}, not a file this process can read`);
  statSync(path);
  return path;
}

function readFrom(path, offset) {
  const fd = openSync(path, "r");
  try {
    const size = statSync(path).size;
    const buf = Buffer.alloc(Math.max(0, size - offset));
    readSync(fd, buf, 0, buf.length, offset);
    return buf.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** The auto_explain entries of database `db` in a stretch of log: [{ms, query, plan: [lines]}]. */
function explainEntries(text, db) {
  const entries = [];
  let cur = null;
  const head = new RegExp(`^\\S+ \\S+ \\S+ \\[\\d+\\] \\S*@${db} LOG:  duration: ([\\d.]+) ms  plan:$`);
  for (const line of text.split("\n")) {
    const m = head.exec(line);
    if (m) {
      cur = { ms: Number(m[1]), lines: [] };
      entries.push(cur);
    } else if (cur && line.startsWith("\t")) cur.lines.push(line.slice(1));
    else cur = null;
  }
  return entries.map((e) => {
    const at = e.lines.findIndex((l) => /\(cost=.*\(actual/.test(l));
    return { ms: e.ms, query: e.lines.slice(0, at).join("\n"), plan: at < 0 ? [] : e.lines.slice(at) };
  });
}

/**
 * Ends the tasks service's idle connections, so that the next ones load the database's settings as
 * they are now (the pool opens a new one on demand; the outbox relay's poll would keep its own
 * connection forever). A busy connection is waited for, at most 10 s.
 */
async function renewTasksConnections(sql) {
  const [{ since }] = await sql`select clock_timestamp() as since`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const old = await sql`
      select pid, state = 'idle' and pg_terminate_backend(pid) as ended from pg_stat_activity
      where datname = current_database() and application_name like 'tasksvc-tasks-%' and backend_start < ${since}`;
    if (old.length === 0 || Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The service's own search statement (its repository, from the package) for query `q` of the
 * tenant, run once on a connection of its own without a time limit. The database's auto_explain
 * settings apply to it as to the service's connections, so its plan is logged when it ends.
 */
async function runDirect(databaseUrl, tenant, q) {
  const { taskSearch } = await import("@tasksvc/tasks");
  const sql = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    connection: { search_path: "tasks", application_name: "bench-direct-plan", TimeZone: "UTC", statement_timeout: 0 },
  });
  try {
    await taskSearch(sql).page(tenant.org, { ...q, limit: 25 });
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function capturePlans({ databaseUrl, gateway, tenant, log, runs = 10 }) {
  log("search: capturing the plans (auto_explain, at the largest size) …");
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const db = new URL(databaseUrl).pathname.slice(1);
  try {
    const [{ pid }] = await sql`select pg_backend_pid() as pid`;
    const logPath = serverLog(pid);
    await sql`load 'auto_explain'`;
    for (const s of [
      "session_preload_libraries = 'auto_explain'",
      "auto_explain.log_min_duration = 0",
      "auto_explain.log_analyze = on",
      "auto_explain.log_buffers = on",
      "auto_explain.log_nested_statements = off",
    ])
      await sql.unsafe(`alter database "${db}" set ${s}`);
    await renewTasksConnections(sql);
    const plans = [];
    for (const s of chosen()) {
      const req = toRequest(s, tenant);
      const offset = statSync(logPath).size;
      // A prepared statement is planned afresh for its first five runs; later ones may reuse a
      // generic plan. The last of `runs` sequential requests shows the plan the load ran with.
      // A request that fails (the gateway gave up) ends the series: its statement still runs, and
      // is logged when it ends (waited for up to 90 s).
      for (let i = 0; i < runs; i++) if ((await probe(gateway, req)).status !== 200) break;
      await settle(sql, log, 90_000);
      await new Promise((r) => setTimeout(r, 300));
      let mine = explainEntries(readFrom(logPath, offset), db).filter((e) => /as reencode/.test(e.query));
      // Cancelled at the service's statement limit, every run: no plan was logged.
      const direct = mine.length === 0 && s.direct !== undefined;
      if (direct) {
        const at = statSync(logPath).size;
        log(`search: ${s.name}: no plan logged; running the service's statement directly, without a time limit …`);
        await runDirect(databaseUrl, tenant, s.direct(tenant));
        await new Promise((r) => setTimeout(r, 300));
        mine = explainEntries(readFrom(logPath, at), db).filter((e) => /as reencode/.test(e.query));
      }
      const last = mine.at(-1);
      plans.push({
        name: s.name,
        direct,
        count: mine.length,
        ms: mine.map((e) => e.ms),
        generic: last ? last.plan.some((l) => /\$\d/.test(l)) : undefined,
        plan: last?.plan ?? [],
      });
    }
    return { logPath, plans };
  } finally {
    await sql.unsafe(`alter database "${db}" reset all`).catch(() => {});
    // Else the outbox relay's poll, every half second, would go on filling the log with plans.
    await renewTasksConnections(sql).catch(() => {});
    await sql.end({ timeout: 1 });
  }
}

// ---------- report ----------

export function printSearch(result) {
  const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "n/a");
  const [small, large] = [result.sizes[0], result.sizes.at(-1)];
  const label = (n) => (n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n));
  const s = result.seeding;
  console.log(
    `\nSearch · ${result.connections} connections · ${result.sizes.map((n) => fmt(n)).join(" and ")} tasks seeded by SQL in ${fmt(s.total, 1)} s ` +
      `with ${s.members} members, ${s.labels} labels and ${s.fields} custom fields each (words ${fmt(s.prepared, 1)} s, rows ${fmt(s.inserted, 1)} s of which followers ${fmt(s.followers, 1)} s, ${s.indexes.length} indexes ${fmt(s.indexed, 1)} s, vacuum analyze ${fmt(s.vacuumed, 1)} s; tasks table ${s.tableSize})`,
  );
  console.log(`targets (reported, not asserted): p99 ≤ 50 ms at ${label(large)}; ${label(large)} within 1.5× of ${label(small)} (req/s and p99)`);
  const header = [
    "scenario",
    `${label(small)} req/s`,
    `${label(small)} p99`,
    `${label(large)} req/s`,
    `${label(large)} p99`,
    `req/s ${label(large)}/${label(small)}`,
    `p99 ${label(large)}/${label(small)}`,
    "alone ms",
    "page",
    "non-2xx",
    "targets",
  ];
  const table = result.rows.map((r) => {
    const a = r.at[small];
    const b = r.at[large];
    const rps = b.rps / a.rps;
    const p99 = b.p99 / a.p99;
    const page = (x) => (x.page.status === 200 ? `${x.page.tasks}${x.page.has_more ? "+" : ""}` : `HTTP ${x.page.status}`);
    const ratio = (n) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : "n/a");
    const met = b.p99 <= 50 && rps >= 1 / 1.5 && p99 <= 1.5 && b.non2xx === 0 && a.non2xx === 0;
    return [
      r.name,
      fmt(a.rps),
      fmt(a.p99, 1),
      fmt(b.rps),
      fmt(b.p99, 1),
      ratio(rps),
      ratio(p99),
      `${fmt(a.page.ms, 1)} / ${fmt(b.page.ms, 1)}`,
      `${page(a)} / ${page(b)}`,
      `${fmt(a.non2xx + a.errors)} / ${fmt(b.non2xx + b.errors)}`,
      met ? "met" : "MISSED",
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of table) console.log(line(row));
  console.log(`alone: one request by itself before the load (${label(small)} / ${label(large)}); page: tasks on it (+: has_more)`);
  for (const r of result.rows) {
    for (const size of result.sizes) {
      const x = r.at[size];
      if (x.page.status !== 200) console.log(`  ${r.name} @ ${fmt(size)}: not measured, alone it answered ${x.page.detail}`);
      if (x.backlog > 0) console.log(`  ${r.name} @ ${fmt(size)}: ${fmt(x.backlog)} statements still running 60 s after the load were cancelled`);
    }
  }
  const p = result.plans;
  if (p.error) {
    console.log(`\nPlans not captured: ${p.error}`);
    return;
  }
  console.log(`\nPlans at ${fmt(result.largest)} tasks (auto_explain: ANALYZE, BUFFERS of the service's own statement; the last of several runs)`);
  for (const x of p.plans) {
    const runs = x.ms.map((ms) => fmt(ms, 1)).join(", ");
    const how = x.direct ? " · cancelled in the service at its limit: run once directly, without one" : "";
    console.log(`\n${x.name} · ${x.count} statements logged (ms: ${runs}) · ${x.generic ? "generic plan" : "custom plan"}${how}`);
    if (x.plan.length === 0) console.log("  (no plan logged)");
    for (const l of x.plan) console.log(`  ${l}`);
  }
}
