// Rewind scenarios of the benchmark (BENCH_ONLY=rewinds), run by run.mjs on its stack.
//
// One organization of BENCH_REWIND_TASKS tasks (1,000,000 by default) seeded by SQL with the search
// scenarios' generator (one version each), then an agent's key changes BENCH_REWIND_CHANGED tasks
// (1,000 by default) spread over the organization: a second version each, recorded with the key as
// its actor, as the service records them. Measured: a page of the list as of an instant in the
// middle of the seeded history (the default order, and filtered by status), at 10 connections and
// at a steady offered rate (BENCH_REWIND_RATE, 20 req/s) beside the same page without as_of (the
// baseline); then a dry-run rewind of the agent's writes, timed one at a time, and one of a second
// key's writes to BENCH_REWIND_LARGE tasks (10,000, the most one rewind takes). Asserts nothing.
import postgres from "postgres";
import { seedSearchData } from "./search.mjs";

const SIZE = Number(process.env.BENCH_REWIND_TASKS ?? 1_000_000);
const CHANGED = Math.min(Number(process.env.BENCH_REWIND_CHANGED ?? 1000), SIZE);
const LARGE = Math.min(Number(process.env.BENCH_REWIND_LARGE ?? 10_000), Math.floor(SIZE / 2));
const RATE = Number(process.env.BENCH_REWIND_RATE ?? 20);
const AGENT = "key_bench_rewind_agent";
const LARGE_AGENT = "key_bench_rewind_large";
const DRY_RUNS = 3;

async function call(gateway, key, method, path, body) {
  const r = await fetch(`${gateway}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json", "idempotency-key": crypto.randomUUID() } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** A second version of `count` tasks spread over the organization (number % step = offset), written now by `agent`. */
async function agentWrites(sql, tenant, agent, count, offset) {
  const step = Math.max(2, Math.floor(SIZE / count));
  await sql`
    with picked as (
      update tasks.tasks set title = title || ' (agent)', status = 'COMPLETED', version = version + 1, version_count = version_count + 1,
        current_version_id = 'ver_bench_' || number, updated_at = clock_timestamp()
      where organization_id = ${tenant.org} and number % ${step} = ${offset} and number <= ${step * count}
      returning *
    )
    insert into tasks.task_versions (id, organization_id, task_number, seq, version, title, description, status, priority, start_date,
      due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at,
      actor_type, actor_id, actor_user_id)
    select current_version_id, organization_id, number, version_count, version, title, description, status, priority, start_date, due_date,
      notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, updated_at, 'api_key', ${agent}, ${tenant.user}
    from picked`;
  await sql`analyze tasks.tasks`;
  await sql`analyze tasks.task_versions`;
}

export async function rewindScenarios({ databaseUrl, gateway, admin, measure, steady, log }) {
  const t = admin("bootstrap", "--org", `Rewind ${SIZE}`, "--plan", "team", "--email", `rewind-${SIZE}@example.test`);
  admin("set-limits", "--org", t.organization_id, "--burst", "1000000000", "--quota", "2000000000");
  const tenant = { size: SIZE, tag: `rewind${SIZE}`, key: t.api_key, org: t.organization_id, user: t.user_id };
  const seeding = await seedSearchData(databaseUrl, [tenant], (m) => log(m.replace(/^search:/, "rewinds:")));
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  let asOf;
  try {
    // The instant: the middle of the seeded history, before the agent's writes.
    const [mid] = await sql`
      select to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at from tasks.tasks
      where organization_id = ${tenant.org} order by updated_at offset ${Math.floor(SIZE / 2)} limit 1`;
    asOf = mid.at;
    log(`rewinds: the agent changes ${CHANGED.toLocaleString("en-US")} tasks …`);
    await agentWrites(sql, tenant, AGENT, CHANGED, 0);
    log(`rewinds: a second key changes ${LARGE.toLocaleString("en-US")} other tasks …`);
    await agentWrites(sql, tenant, LARGE_AGENT, LARGE, 1);
  } finally {
    await sql.end({ timeout: 1 });
  }
  const since = new Date(Date.now() - 3600_000).toISOString();
  const headers = { authorization: `Bearer ${tenant.key}` };
  const pages = [];
  for (const [label, query] of [
    ["default order", ""],
    ["status=TODO", "&status=TODO"],
  ]) {
    const path = `/v1/tasks?as_of=${asOf}&limit=25${query}`;
    const first = await call(gateway, tenant.key, "GET", path);
    const name = `GET /v1/tasks?as_of (${label}, ${SIZE.toLocaleString("en-US")} tasks)`;
    const r = await measure(name, { method: "GET", path, headers }, 10);
    const atRate = await steady(name, { method: "GET", path, headers }, RATE);
    const now = await steady(`${name} without as_of`, { method: "GET", path: `/v1/tasks?limit=25${query}`, headers }, RATE);
    pages.push({
      label,
      items: first.data.length,
      rps: r.rps,
      p50_ms: r.p50,
      p99_ms: r.p99,
      non2xx: r.non2xx,
      steady: { rate: RATE, p50_ms: atRate.p50, p99_ms: atRate.p99, baseline_p50_ms: now.p50, baseline_p99_ms: now.p99 },
    });
  }
  const dryRuns = [];
  for (let i = 0; i < DRY_RUNS; i++) {
    const t0 = performance.now();
    const rw = await call(gateway, tenant.key, "POST", "/v1/rewinds", { match: { credential_id: AGENT, since } });
    dryRuns.push({ ms: performance.now() - t0, counts: rw.counts, items: rw.items.length });
  }
  const t0 = performance.now();
  const large = await call(gateway, tenant.key, "POST", "/v1/rewinds", { match: { credential_id: LARGE_AGENT, since } });
  const largeRun = { ms: performance.now() - t0, counts: large.counts, items: large.items.length, tasks: LARGE };
  return { size: SIZE, changed: CHANGED, as_of: asOf, seeding_seconds: seeding.total, pages, dry_runs: dryRuns, large: largeRun };
}

export function printRewinds(r) {
  const fmt = (n, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  console.log(`\nRewinds · ${fmt(r.size)} tasks, ${fmt(r.changed)} of them changed by one key · as of ${r.as_of}`);
  for (const p of r.pages) {
    console.log(
      `GET /v1/tasks?as_of, ${p.label}: ${fmt(p.items)} items a page · ${fmt(p.rps)} req/s at 10 connections · p50 ${fmt(p.p50_ms, 1)} ms · p99 ${fmt(p.p99_ms, 1)} ms · non-2xx ${p.non2xx}`,
    );
  }
  for (const p of r.pages) {
    const s = p.steady;
    console.log(
      `  at a steady ${fmt(s.rate)} req/s: p50 ${fmt(s.p50_ms, 1)} ms, p99 ${fmt(s.p99_ms, 1)} ms · the same page without as_of: p50 ${fmt(s.baseline_p50_ms, 1)} ms, p99 ${fmt(s.baseline_p99_ms, 1)} ms (${p.label})`,
    );
  }
  for (const d of r.dry_runs) {
    console.log(
      `POST /v1/rewinds dry run of the key's writes: ${fmt(d.ms)} ms (reverted ${d.counts.reverted}, trashed ${d.counts.trashed}, skipped ${d.counts.skipped}; ${d.items} items listed)`,
    );
  }
  const l = r.large;
  console.log(
    `POST /v1/rewinds dry run of a key's writes to ${fmt(l.tasks)} tasks (inside the request): ${fmt(l.ms)} ms (reverted ${l.counts.reverted}, skipped ${l.counts.skipped}; ${l.items} items in the answer's first page)`,
  );
}
