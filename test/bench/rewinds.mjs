// Rewind scenarios of the benchmark (BENCH_ONLY=rewinds), run by run.mjs on its stack.
//
// One organization of BENCH_REWIND_TASKS tasks (1,000,000 by default) seeded by SQL with the search
// scenarios' generator (one version each), then an agent's key changes BENCH_REWIND_CHANGED tasks
// (1,000 by default) spread over the organization: a second version each, recorded with the key as
// its actor, as the service records them. Measured: a page of the list as of an instant in the
// middle of the seeded history (the default order, and filtered by status), latency by the load
// generator; then a dry-run rewind of the agent's writes, timed one at a time. Asserts nothing.
import postgres from "postgres";
import { seedSearchData } from "./search.mjs";

const SIZE = Number(process.env.BENCH_REWIND_TASKS ?? 1_000_000);
const CHANGED = Math.min(Number(process.env.BENCH_REWIND_CHANGED ?? 1000), SIZE);
const AGENT = "key_bench_rewind_agent";
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

/** A second version of every (SIZE / CHANGED)-th task, written now by the agent's key. */
async function agentWrites(sql, tenant) {
  const step = Math.max(1, Math.floor(SIZE / CHANGED));
  await sql`
    with picked as (
      update tasks.tasks set title = title || ' (agent)', status = 'COMPLETED', version = version + 1, version_count = version_count + 1,
        current_version_id = 'ver_bench_' || number, updated_at = clock_timestamp()
      where organization_id = ${tenant.org} and number % ${step} = 0 and number <= ${step * CHANGED}
      returning *
    )
    insert into tasks.task_versions (id, organization_id, task_number, seq, version, title, description, status, priority, start_date,
      due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at,
      actor_type, actor_id, actor_user_id)
    select current_version_id, organization_id, number, version_count, version, title, description, status, priority, start_date, due_date,
      notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, updated_at, 'api_key', ${AGENT}, ${tenant.user}
    from picked`;
  await sql`analyze tasks.tasks`;
  await sql`analyze tasks.task_versions`;
}

export async function rewindScenarios({ databaseUrl, gateway, admin, measure, log }) {
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
    await agentWrites(sql, tenant);
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
    const r = await measure(`GET /v1/tasks?as_of (${label}, ${SIZE.toLocaleString("en-US")} tasks)`, { method: "GET", path, headers }, 10);
    pages.push({ label, items: first.data.length, rps: r.rps, p50_ms: r.p50, p99_ms: r.p99, non2xx: r.non2xx });
  }
  const dryRuns = [];
  for (let i = 0; i < DRY_RUNS; i++) {
    const t0 = performance.now();
    const rw = await call(gateway, tenant.key, "POST", "/v1/rewinds", { match: { credential_id: AGENT, since } });
    dryRuns.push({ ms: performance.now() - t0, counts: rw.counts, items: rw.items.length });
  }
  return { size: SIZE, changed: CHANGED, as_of: asOf, seeding_seconds: seeding.total, pages, dry_runs: dryRuns };
}

export function printRewinds(r) {
  const fmt = (n, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  console.log(`\nRewinds · ${fmt(r.size)} tasks, ${fmt(r.changed)} of them changed by one key · as of ${r.as_of}`);
  for (const p of r.pages) {
    console.log(
      `GET /v1/tasks?as_of, ${p.label}: ${fmt(p.items)} items a page · ${fmt(p.rps)} req/s at 10 connections · p50 ${fmt(p.p50_ms, 1)} ms · p99 ${fmt(p.p99_ms, 1)} ms · non-2xx ${p.non2xx}`,
    );
  }
  for (const d of r.dry_runs) {
    console.log(
      `POST /v1/rewinds dry run of the key's writes: ${fmt(d.ms)} ms (reverted ${d.counts.reverted}, trashed ${d.counts.trashed}, skipped ${d.counts.skipped}; ${d.items} items listed)`,
    );
  }
}
