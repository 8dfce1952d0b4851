#!/usr/bin/env node
// What GET /v1/webhook-endpoints/{id}/stats costs at a million deliveries, beside what counting
// the rows would cost, and what the statistics' triggers add to the delivery machinery's writes.
// Prints figures, asserts nothing. Run after `npx tsc -b`: node test/bench/webhook-stats.mjs
//
// A database of its own (dropped at the end) with the webhooks schema migrated as the service
// does; one endpoint with 1,000,000 deliveries over the last 24 h (97% succeeded, some on a
// retry, 1% failed after three attempts, 0.5% disabled, 5,000 pending, 32 in flight) and their
// 1.1 million attempts, inserted in chunks. The triggers write the deltas as for any writer and
// the service's own compaction folds them into the rollup. Then, in the same run:
//   - the stats read through the service (the repository's one statement), ~50 runs;
//   - the baseline: the same answer counted from the rows (deliveries_page_idx, the attempts
//     joined, percentile_cont), and the rollup read at minute grain only (no hour or day rows);
//   - the hot path: the machinery's own statements (attemptsRepo.claim, updateDeliveries and
//     insertAttempts, 200 batches of 200 rows each, on deliveries with 1 KiB bodies) with the
//     triggers on and off, alternating.
import { randomBytes } from "node:crypto";
import { callerOf } from "@tasksvc/contracts";
import { createDb, migrate } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { attemptsRepo, deliveryStatsService, MIGRATIONS_DIR } from "@tasksvc/webhooks";
import postgres from "postgres";

const N = Number(process.env.BENCH_DELIVERIES ?? 1_000_000);
const CHUNK = 100_000;
const STATS_RUNS = 50;
const BASELINE_RUNS = 7;
const BATCHES = 200;
const BATCH = 200;
const ORG = "org_bench_stats";
const EP = "whe_bench_stats";
const HOT = "whe_bench_hot";

const base = new URL(process.env.DATABASE_URL || "postgres://127.0.0.1:5432/postgres");
if (!base.username) base.username = "postgres";
const dbName = `bench_webhook_stats_${randomBytes(4).toString("hex")}`;
const url = new URL(base);
url.pathname = `/${dbName}`;
const note = (msg) => process.stderr.write(`${msg}\n`);
const ms = (t0) => performance.now() - t0;
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
};
async function timed(runs, fn) {
  const out = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    out.push(ms(t0));
  }
  return out;
}

const admin = postgres(base.toString(), { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${dbName}`);
const db = createDb({ url: url.toString(), schema: "webhooks", max: 4 });
const sql = db.sql;
try {
  await migrate({ url: url.toString(), schema: "webhooks", dir: MIGRATIONS_DIR, log: createLogger({ service: "bench", level: "silent" }) });
  await sql`insert into endpoints (id, organization_id, url, secret_sealed) values
    (${EP}, ${ORG}, 'https://hooks.example.com/stats', 'v1.bench'), (${HOT}, ${ORG}, 'https://hooks.example.com/hot', 'v1.bench')`;

  // ---- the load: 1,000,000 deliveries over 24 h, their attempts, the deltas the triggers wrote
  let t0 = performance.now();
  for (let from = 1; from <= N; from += CHUNK) {
    const to = Math.min(N, from + CHUNK - 1);
    await sql`
      insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at, created_at)
      select 'whd_b' || i, ${ORG}, ${EP}, 'evt_b' || i, 'task.created', '{"type":"task.created"}'::jsonb, s.state,
             case s.state when 'FAILED' then 3 when 'DISABLED' then 1 when 'SUCCEEDED' then case when i % 10 = 5 then 2 else 1 end else 0 end,
             case when s.state = 'PENDING' then now() + interval '1 day' end,
             now() - interval '24 hours' + i * (interval '24 hours' / ${N})
      from generate_series(${from}::int, ${to}::int) i
      cross join lateral (select case when i > ${N - 32} then 'DELIVERING' when i > ${N - 5000} then 'PENDING'
                                      when i % 100 = 1 then 'FAILED' when i % 200 = 2 then 'DISABLED' else 'SUCCEEDED' end as state) s`;
    // Durations: log-normal around 40 ms (Box-Muller), a tail into seconds.
    await sql`
      insert into attempts (delivery_id, attempt, attempted_at, outcome, status, duration_ms)
      select d.id, k, d.created_at + k * interval '1 second',
             case when k = d.attempt_count and d.state = 'SUCCEEDED' then 'delivered' else 'request_failed' end,
             case when k = d.attempt_count and d.state = 'SUCCEEDED' then 200 else 500 end,
             least(60000, greatest(1, exp(ln(40) + 0.9 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))))::int
      from deliveries d cross join lateral generate_series(1, d.attempt_count) k
      where d.endpoint_id = ${EP} and d.id in (select 'whd_b' || i from generate_series(${from}::int, ${to}::int) i)`;
    note(`  loaded ${to.toLocaleString("en")} deliveries (${(ms(t0) / 1000).toFixed(0)} s)`);
  }
  const loadSeconds = ms(t0) / 1000;
  const [{ deltas }] = await sql`select count(*)::int as deltas from delivery_stat_deltas`;
  const stats = deliveryStatsService({ db });
  t0 = performance.now();
  const moved = await stats.compact();
  const compactMs = ms(t0);
  await sql`vacuum analyze deliveries, attempts, delivery_stats, delivery_stat_deltas`;
  const [sizes] = await sql`
    select (select count(*)::int from attempts) as attempts, (select count(*)::int from delivery_stats) as rollup_rows,
           pg_total_relation_size('delivery_stats') as rollup_bytes, pg_total_relation_size('deliveries') + pg_total_relation_size('attempts') as rows_bytes`;

  // ---- the read: through the service, the rows, and the rollup at minute grain only
  const caller = callerOf({ request_id: "bench", organization_id: ORG, user_id: "usr_bench", credential_id: "key_bench", scopes: [], plan: "pro" });
  const answer = await stats.endpointStats(caller, EP, undefined);
  const since = answer.since;
  await timed(5, () => stats.endpointStats(caller, EP, undefined));
  const read = await timed(STATS_RUNS, () => stats.endpointStats(caller, EP, undefined));
  // Inside a minute, 12 h back: the partial minute from the rows, minutes, hours, no day row.
  const halfDay = new Date(Date.now() - 12 * 3600_000 + 17_500).toISOString();
  const readHalf = await timed(STATS_RUNS, () => stats.endpointStats(caller, EP, halfDay));

  const raw = () => sql`
    with d as (select id, state from deliveries where endpoint_id = ${EP} and created_at >= ${since}::timestamptz)
    select (select count(*) filter (where state = 'PENDING') from d)::int as pending,
           (select count(*) filter (where state = 'DELIVERING') from d)::int as delivering,
           (select count(*) filter (where state = 'SUCCEEDED') from d)::int as succeeded,
           (select count(*) filter (where state = 'FAILED') from d)::int as failed,
           (select count(*) filter (where state = 'DISABLED') from d)::int as disabled,
           a.total, a.failed_attempts, a.p50, a.p99
    from (select count(*)::int as total, count(*) filter (where t.outcome <> 'delivered')::int as failed_attempts,
                 percentile_cont(0.5) within group (order by t.duration_ms) as p50,
                 percentile_cont(0.99) within group (order by t.duration_ms) as p99
          from attempts t join d on d.id = t.delivery_id) a`;
  const [rawAnswer] = await raw();
  const rawRead = await timed(BASELINE_RUNS, raw);
  const minuteOnly = () => sql`
    with r as (select created, succeeded, failed, disabled, attempts, attempts_failed, latency from delivery_stats
               where endpoint_id = ${EP} and width = 1 and bucket >= ${since}::timestamptz)
    select (select sum(created) from r), (select sum(attempts) from r),
           (select count(*) from (select u.i, sum(u.n) from r cross join unnest(r.latency) with ordinality u (n, i) group by u.i) h)`;
  await minuteOnly();
  const minuteRead = await timed(20, minuteOnly);

  // ---- the hot path: the machinery's statements with the triggers on and off, alternating
  const triggers = async (on) => {
    for (const [table, name] of [
      ["deliveries", "delivery_stats_insert"],
      ["deliveries", "delivery_stats_update"],
      ["attempts", "attempt_stats_insert"],
      ["attempts", "attempt_stats_update"],
    ])
      await sql.unsafe(`alter table ${table} ${on ? "enable" : "disable"} trigger ${name}`);
  };
  const repo = attemptsRepo(sql);
  // The hot path's rows: another endpoint's deliveries with bodies the size of a real task event
  // (about 1 KiB: the update trigger's transition tables copy whole rows), due now.
  await sql`
    insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, created_at)
    select 'whd_h' || i, ${ORG}, ${HOT}, 'evt_h' || i, 'task.updated',
           jsonb_build_object('type', 'task.updated', 'timestamp', now(), 'data', jsonb_build_object(
             'id', 'T-' || i, 'title', repeat('t', 80), 'description', repeat('d', 700), 'status', 'IN_PROGRESS', 'priority', 'HIGH',
             'project_ids', jsonb_build_array('prj_5vN5Zu6nSVCjmB2jJBpwRY'), 'version', 3, 'created_at', now(), 'updated_at', now())),
           now() - interval '1 hour' + i * interval '10 ms'
    from generate_series(1, ${2 * BATCHES * BATCH}) i`;
  await sql`vacuum analyze deliveries`;
  const ids = (await sql`select id from deliveries where endpoint_id = ${HOT} order by created_at`).map((r) => r.id);
  const batchesOf = (list) => Array.from({ length: list.length / BATCH }, (_, k) => list.slice(k * BATCH, (k + 1) * BATCH));
  const modes = { on: batchesOf(ids.slice(0, BATCHES * BATCH)), off: batchesOf(ids.slice(BATCHES * BATCH)) };
  const hot = { claim: { on: [], off: [] }, updateDeliveries: { on: [], off: [] }, insertAttempts: { on: [], off: [] } };
  const SLICES = 8;
  const SLICE = BATCHES / SLICES;
  /** Runs `step` for SLICE batches of each mode in turn, the order of the modes swapped each slice. */
  const alternate = async (name, step) => {
    for (let q = 0; q < SLICES; q++) {
      for (const mode of q % 2 === 0 ? ["on", "off"] : ["off", "on"]) {
        await triggers(mode === "on");
        for (const b of modes[mode].slice(q * SLICE, (q + 1) * SLICE)) {
          const start = performance.now();
          await step(b);
          hot[name][mode].push(ms(start));
        }
      }
    }
  };
  // claim: the dispatcher's pass, 200 due PENDING deliveries become DELIVERING; given back
  // untimed (due tomorrow), so that the next claim takes fresh rows.
  await alternate("claim", async () => {
    const claimed = await repo.claim(BATCH, BATCH, 60_000);
    await sql`update deliveries set state = 'PENDING', lease_until = null, next_attempt_at = now() + interval '1 day'
      where id = any(${claimed.map((c) => c.delivery_id)})`;
  });
  // updateDeliveries: DELIVERING → SUCCEEDED, as a report's transaction writes them.
  await sql`update deliveries set state = 'DELIVERING', next_attempt_at = null where endpoint_id = ${HOT}`;
  await alternate("updateDeliveries", (b) =>
    repo.updateDeliveries(b.map((id) => ({ id, state: "SUCCEEDED", attemptCount: 1, lastStatus: 200, nextInMs: null }))),
  );
  // insertAttempts: the attempt of each, timed 5 ms to 2 s.
  await alternate("insertAttempts", (b) => {
    const at = new Date().toISOString();
    return repo.insertAttempts(
      b.map((id, k) => ({
        deliveryId: id,
        attempt: 1,
        attemptedAt: at,
        outcome: "delivered",
        status: 200,
        errorClass: null,
        durationMs: 5 + ((k * 37) % 2000),
      })),
    );
  });
  await triggers(true);
  const [{ n: steadyDeltas }] = await sql`select count(*)::int as n from delivery_stat_deltas`;
  t0 = performance.now();
  await stats.compact();
  const steady = { deltas: steadyDeltas, ms: ms(t0) };

  // ---- figures
  const line = (label, xs) => `  ${label.padEnd(62)} p50 ${fmt(pct(xs, 0.5)).padStart(7)} ms   p99 ${fmt(pct(xs, 0.99)).padStart(7)} ms   (${xs.length} runs)`;
  console.log(`\nWebhook endpoint stats at ${N.toLocaleString("en")} deliveries over 24 h (${sizes.attempts.toLocaleString("en")} attempts), one endpoint`);
  console.log(
    `  load ${loadSeconds.toFixed(0)} s with the triggers on; ${deltas.toLocaleString("en")} deltas compacted in ${fmt(compactMs)} ms (${moved.toLocaleString("en")} moved) into ${sizes.rollup_rows.toLocaleString("en")} rollup rows`,
  );
  console.log(
    `  rollup ${(sizes.rollup_bytes / 2 ** 20).toFixed(1)} MiB beside ${(sizes.rows_bytes / 2 ** 20).toFixed(0)} MiB of deliveries and attempts (bodies of a few bytes here)`,
  );
  console.log("\nRead: the same answer three ways");
  console.log(line("stats through the service, since 24 h ago (default)", read));
  console.log(line("stats through the service, since 12 h ago inside a minute", readHalf));
  console.log(line("baseline: counted from the rows (index, attempts join, percentile_cont)", rawRead));
  console.log(line("baseline: rollup at minute grain only (1,440 rows and histograms)", minuteRead));
  console.log(`  stats:    ${JSON.stringify(answer)}`);
  console.log(
    `  counted:  deliveries ${JSON.stringify({ pending: rawAnswer.pending, delivering: rawAnswer.delivering, succeeded: rawAnswer.succeeded, failed: rawAnswer.failed, disabled: rawAnswer.disabled })} attempts ${rawAnswer.total}/${rawAnswer.failed_attempts} failed, percentile_cont p50 ${Number(rawAnswer.p50).toFixed(1)} p99 ${Number(rawAnswer.p99).toFixed(1)}`,
  );
  console.log(`\nHot path: ${BATCHES} batches of ${BATCH} rows per statement, triggers on and off alternating in ${SLICES} slices`);
  for (const [name, m] of Object.entries(hot)) {
    const extra = (pct(m.on, 0.5) / pct(m.off, 0.5) - 1) * 100;
    console.log(
      `  ${name.padEnd(17)} on: p50 ${fmt(pct(m.on, 0.5))} ms p99 ${fmt(pct(m.on, 0.99))} ms   off: p50 ${fmt(pct(m.off, 0.5))} ms p99 ${fmt(pct(m.off, 0.99))} ms   ${extra >= 0 ? "+" : ""}${extra.toFixed(0)}% per statement (p50)`,
    );
  }
  console.log(`  compaction of the ${steady.deltas.toLocaleString("en")} deltas the hot path's statements wrote: ${fmt(steady.ms)} ms`);
} finally {
  await db.end({ timeout: 1 });
  await admin.unsafe(`drop database if exists ${dbName} with (force)`);
  await admin.end({ timeout: 1 });
}
