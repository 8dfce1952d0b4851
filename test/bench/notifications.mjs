// Notifications scenarios of the benchmark, run by run.mjs on its stack.
//
// notifications: notification latency. Tasks are created at a steady offered rate (open loop, as
// the streams scenario writes), each with 3 assignees who are members of the organization and not
// the writer, for `warmup` then `duration` seconds. A notification's latency is the time it became
// readable through GET /v1/notifications minus its event's time (the notification's `created_at`,
// the writing transaction's time, on this machine's clock). The rows carry no insert time, so
// readability is observed by polling the API for a sample of the assignees at a bounded rate
// (SAMPLE users, each every POLL_MS): a latency is late by at most POLL_MS. Due and arrived count
// every notification of the run, from the notifications table once the tail has drained.
//
// comments: the cost of a comment (one mention) beside a create, measured by run.mjs with its CPU
// table; this module makes the task and the member the comments mention.
import { randomBytes } from "node:crypto";
import http from "node:http";
import postgres from "postgres";
import { keysRpc, systemContext } from "@tasksvc/contracts";
import { client, connectNats } from "@tasksvc/nats";
import { openLoop } from "./open-loop.mjs";

const RATE = Number(process.env.BENCH_NOTIFY_RATE ?? 200);
/** Members the assignments go round; each task takes the next 3, so each member gets RATE × 3 / MEMBERS a second. */
const MEMBERS = Number(process.env.BENCH_NOTIFY_MEMBERS ?? 60);
const ASSIGNEES = 3;
const SAMPLE = Number(process.env.BENCH_NOTIFY_SAMPLE ?? 8);
const POLL_MS = Number(process.env.BENCH_NOTIFY_POLL_MS ?? 200);
const TARGET_P99_MS = 2000;
const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });

const quantile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One JSON request with the keep-alive agent; resolves {status, body} (status 0 when it failed). */
function request(url, { method = "GET", key, body }) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers = { authorization: `Bearer ${key}` };
  if (payload !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
  return new Promise((resolve) => {
    const req = http.request(url, { method, agent, headers, timeout: 30_000 }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        let parsed;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode, body: parsed });
      });
      res.on("error", () => resolve({ status: 0 }));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve({ status: 0 }));
    req.end(payload);
  });
}

/** A fresh organization (limits lifted: the bench measures notifications, not refusals) and `members` more members, each with a key. */
async function organization({ natsUrl, namespace, members, tag }) {
  const nc = await connectNats({ url: natsUrl, name: `bench-${tag}` });
  try {
    const keys = client(nc, keysRpc, { namespace, timeoutMs: 10_000 });
    const ctx = systemContext(`bench-${tag}`);
    const hex = randomBytes(3).toString("hex");
    const org = await keys.call("bootstrap", { org: `Bench ${tag} ${hex}`, plan: "team", email: `${tag}-${hex}@example.test` }, ctx);
    await keys.call("setLimits", { org: org.organization_id, burst: 1_000_000_000, quota: 2_000_000_000 }, ctx);
    const users = [];
    for (let i = 0; i < members; i++) {
      const u = await keys.call("addUser", { org: org.organization_id, email: `${tag}-${hex}-${i}@example.test`, role: "member" }, ctx);
      users.push({ userId: u.user_id, apiKey: u.api_key });
    }
    return { organizationId: org.organization_id, writer: { userId: org.user_id, apiKey: org.api_key }, users };
  } finally {
    await nc.drain();
  }
}

/** Tasks the spread comment scenario takes in turn. */
export const SPREAD_TASKS = Number(process.env.BENCH_COMMENT_TASKS ?? 100);

/**
 * For the comment scenarios: a task of the bench tenant, SPREAD_TASKS more for the comments spread
 * over many tasks, and a member of its organization for the comments to mention.
 */
export async function commentTarget({ gateway, key, organizationId, natsUrl, namespace }) {
  const nc = await connectNats({ url: natsUrl, name: "bench-comments" });
  let userId;
  try {
    const keys = client(nc, keysRpc, { namespace, timeoutMs: 10_000 });
    const hex = randomBytes(3).toString("hex");
    userId = (await keys.call("addUser", { org: organizationId, email: `mentioned-${hex}@example.test`, role: "member" }, systemContext("bench-comments")))
      .user_id;
  } finally {
    await nc.drain();
  }
  const task = await request(`${gateway}/v1/tasks`, { method: "POST", key, body: { title: "Discussed by the benchmark" } });
  if (task.status !== 201) throw new Error(`the comment scenario's task: ${task.status} ${JSON.stringify(task.body)}`);
  const spread = [];
  for (let i = 0; i < SPREAD_TASKS; i++) {
    const t = await request(`${gateway}/v1/tasks`, { method: "POST", key, body: { title: `Discussed by the benchmark, ${i + 1}` } });
    if (t.status !== 201) throw new Error(`the spread comment scenario's task: ${t.status} ${JSON.stringify(t.body)}`);
    spread.push(t.body.id);
  }
  return { taskId: task.body.id, spreadIds: spread, userId, body: `Looks good to me, <@${userId}>; merging after lunch.` };
}

/** Open-loop creates (openLoop); task i takes the next 3 members. */
function steadyCreates({ gateway, writer, users, rate, seconds, onDone }) {
  return openLoop({
    rate,
    seconds,
    send: (n) => {
      const assignees = Array.from({ length: ASSIGNEES }, (_, k) => users[(n * ASSIGNEES + k) % users.length].userId);
      return request(`${gateway}/v1/tasks`, {
        method: "POST",
        key: writer.apiKey,
        body: { title: "Notification benchmark task", assignee_ids: assignees },
      }).then((r) => onDone(r.status, assignees));
    },
  });
}

/** Polls each sampled user's newest page every POLL_MS; records each notification's first sighting. */
function pollInboxes(gateway, sample) {
  const firstSeen = new Map();
  let polls = 0;
  let failed = 0;
  let running = true;
  const loops = sample.map(async (u, i) => {
    // Spread over the interval, so the polls come at an even rate rather than in bursts.
    await sleep((POLL_MS / sample.length) * i);
    // A notification first seen was not readable when the user's previous read was sent.
    let previous = Date.now();
    while (running) {
      const sentAt = Date.now();
      const due = sentAt + POLL_MS;
      const r = await request(`${gateway}/v1/notifications?limit=100`, { key: u.apiKey });
      const at = Date.now();
      polls += 1;
      if (r.status !== 200) failed += 1;
      else for (const n of r.body.data) if (!firstSeen.has(n.id)) firstSeen.set(n.id, { at, notBefore: previous, createdAt: Date.parse(n.created_at) });
      previous = sentAt;
      await sleep(Math.max(0, due - Date.now()));
    }
  });
  return {
    firstSeen,
    stats: () => ({ polls, pollsFailed: failed }),
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

export async function notificationScenarios({ gateway, databaseUrl, natsUrl, namespace, duration, warmup, log }) {
  log(`bench: notifications: an organization with ${MEMBERS} members …`);
  const { organizationId, writer, users } = await organization({ natsUrl, namespace, members: MEMBERS, tag: "notify" });
  // Every (MEMBERS / SAMPLE)th member: each gets the same share of the assignments.
  const sample = Array.from({ length: Math.min(SAMPLE, users.length) }, (_, i) => users[Math.floor((i * users.length) / Math.min(SAMPLE, users.length))]);
  const sampled = new Set(sample.map((u) => u.userId));
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    log(
      `bench: notifications: ${RATE} creates/s × ${ASSIGNEES} assignees, ${warmup} s warm-up + ${duration} s, polling ${sample.length} inboxes every ${POLL_MS} ms …`,
    );
    const poller = pollInboxes(gateway, sample);
    let created = 0;
    let failed = 0;
    let sampleDue = 0;
    let from = Number.POSITIVE_INFINITY;
    let to = Number.POSITIVE_INFINITY;
    const load = steadyCreates({
      gateway,
      writer,
      users,
      rate: RATE,
      seconds: warmup + duration,
      onDone: (status, assignees) => {
        if (status !== 201) return void (failed += 1);
        created += 1;
        sampleDue += assignees.filter((a) => sampled.has(a)).length;
      },
    });
    await sleep(warmup * 1000);
    // Autovacuum is off on this machine's Postgres: the inbox is planned on what the warm-up wrote, not on an empty table.
    await sql`analyze notifications.notifications`;
    from = Date.now();
    await sleep(duration * 1000);
    to = Date.now();
    await load;
    // The tail: until every due notification is in the table (and the sample's readable), or 30 s.
    const due = created * ASSIGNEES;
    const inTable = async () => Number((await sql`select count(*)::int as n from notifications.notifications where organization_id = ${organizationId}`)[0].n);
    const drainUntil = Date.now() + 30_000;
    let arrived = await inTable();
    while ((arrived < due || poller.firstSeen.size < sampleDue) && Date.now() < drainUntil) {
      await sleep(200);
      arrived = await inTable();
    }
    await poller.stop();
    const duplicates = Number(
      (
        await sql`select count(*)::int as n from (select 1 from notifications.notifications where organization_id = ${organizationId}
          group by event_id, user_id, type having count(*) > 1) d`
      )[0].n,
    );
    // Latencies of the notifications whose event was written inside the measured window.
    const inWindow = [...poller.firstSeen.values()].filter((s) => s.createdAt >= from && s.createdAt < to);
    const latencies = inWindow.map((s) => s.at - s.createdAt).sort((a, b) => a - b);
    // The other side of the polls' uncertainty: the previous read, which did not see it yet.
    const lower = inWindow.map((s) => Math.max(0, s.notBefore - s.createdAt)).sort((a, b) => a - b);
    return {
      rate: RATE,
      members: MEMBERS,
      sample: sample.length,
      pollMs: POLL_MS,
      seconds: (to - from) / 1000,
      created,
      failed,
      due,
      arrived,
      duplicates,
      sampleDue,
      sampleSeen: poller.firstSeen.size,
      windowSamples: latencies.length,
      p50: quantile(latencies, 50),
      p99: quantile(latencies, 99),
      lowerP50: quantile(lower, 50),
      lowerP99: quantile(lower, 99),
      max: latencies.at(-1) ?? Number.NaN,
      ...poller.stats(),
    };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "–");

/** The latency line with its target, and the comment cost table (CPU ms per request by process). */
export function printNotifications(latency, comments) {
  if (latency) {
    const r = latency;
    console.log(
      `\nNotification latency · ${fmt(r.rate)} task creates/s offered (open loop) × ${ASSIGNEES} assignees of ${fmt(r.members)} members · event → readable through GET /v1/notifications, ${fmt(r.sample)} inboxes polled every ${fmt(r.pollMs)} ms (figures late by at most that)`,
    );
    console.log(
      `p50 ${fmt(r.p50, 1)} ms · p99 ${fmt(r.p99, 1)} ms (the previous reads, which had not seen them: p50 ${fmt(r.lowerP50, 1)} ms, p99 ${fmt(r.lowerP99, 1)} ms) · max ${fmt(r.max, 1)} ms over ${fmt(r.windowSamples)} notifications of the ${fmt(r.seconds, 1)} s window · target p99 ≤ ${fmt(TARGET_P99_MS)} ms: ${r.p99 <= TARGET_P99_MS ? "met" : "NOT met"}`,
    );
    console.log(
      `notifications due ${fmt(r.due)}, arrived ${fmt(r.arrived)} (${fmt(r.duplicates)} duplicated); the sample's due ${fmt(r.sampleDue)}, seen ${fmt(r.sampleSeen)}; ${fmt(r.failed)} failed creates; ${fmt(r.polls)} inbox reads, ${fmt(r.pollsFailed)} not answered 200`,
    );
  }
  if (comments) {
    console.log(
      `\nThe cost of a comment · POST /v1/tasks/{id}/comments (one mention) on one task and spread over ${fmt(SPREAD_TASKS)} tasks in turn, beside POST /v1/tasks, all with Idempotency-Key, one run · CPU: user + system ms per request, every process, events settled`,
    );
    const rows = [
      ["POST /v1/tasks", comments.create],
      ["POST /v1/tasks/{id}/comments", comments.comment],
      ...(comments.spread ? [[`POST …/comments, ${fmt(SPREAD_TASKS)} tasks`, comments.spread]] : []),
    ];
    const head = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "steady req/s", "steady p50 ms", "steady p99 ms", "CPU ms/req", "steady CPU ms/req"];
    const body = rows.map(([name, r]) => [
      name,
      fmt(r.saturated.rps),
      fmt(r.saturated.p50, 1),
      fmt(r.saturated.p99, 1),
      fmt(r.saturated.non2xx + r.steady.non2xx),
      fmt(r.steady.rate),
      fmt(r.steady.p50, 1),
      fmt(r.steady.p99, 1),
      fmt(r.saturated.cpu.total, 2),
      fmt(r.steady.cpu.total, 2),
    ]);
    table(head, body);
    const procs = [...new Set(rows.flatMap(([, r]) => [...Object.keys(r.saturated.cpu), ...Object.keys(r.steady.cpu)]))].sort(
      (a, b) => (a === "total") - (b === "total"),
    );
    const c = (o, k) => (o[k] === undefined ? "-" : fmt(o[k], 3));
    console.log("");
    table(
      ["process", "create saturated", "create steady", "comment saturated", "comment steady", "spread saturated", "spread steady"],
      procs.map((k) => [
        k,
        c(comments.create.saturated.cpu, k),
        c(comments.create.steady.cpu, k),
        c(comments.comment.saturated.cpu, k),
        c(comments.comment.steady.cpu, k),
        comments.spread ? c(comments.spread.saturated.cpu, k) : "-",
        comments.spread ? c(comments.spread.steady.cpu, k) : "-",
      ]),
    );
    const ratio = (a, b) => `${(a.total / b.total).toFixed(2)}×`;
    console.log(
      `a comment's CPU per request: ${ratio(comments.comment.saturated.cpu, comments.create.saturated.cpu)} a create's saturated, ${ratio(comments.comment.steady.cpu, comments.create.steady.cpu)} steady${comments.spread ? `; spread over tasks ${ratio(comments.spread.saturated.cpu, comments.create.saturated.cpu)} saturated, ${ratio(comments.spread.steady.cpu, comments.create.steady.cpu)} steady` : ""}`,
    );
  }
}

function table(head, body) {
  const w = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const l = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  ");
  console.log(l(head));
  console.log(w.map((n) => "-".repeat(n)).join("  "));
  for (const row of body) console.log(l(row));
}
