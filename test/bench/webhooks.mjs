// Webhook delivery scenarios of the benchmark (issue 11), run by run.mjs in the same run as the
// baselines, on its stack (webhooks and delivery services in their own processes).
//
// (a) fan-out: 10 endpoints on one keep-alive receiver, tasks created at a steady rate (RATE per
//     second, so 10 × RATE deliveries per second are due): successful deliveries per second and
//     event-to-receiver latency p50/p99 (the task's commit to the receiver's arrival).
// (b) isolation: the same with an 11th endpoint that hangs until WEBHOOK_TIMEOUT_MS: the healthy
//     endpoints' figures, and their p99 as a ratio of (a)'s.
// (c) capacity: (b)'s endpoints with tasks created faster than they can be delivered; the
//     deliveries per second are what the system sustains (latency there only grows).
// (r) rate limit: (a)'s ten beside an 11th endpoint limited to RATE_LIMIT/s (it gets RATE
//     deliveries/s, so its backlog grows): the ten's figures as a ratio of (a)'s, which ran
//     just before; the limited one's deliveries/s, and the attempts the workers deferred.
import http from "node:http";
import { openLoop } from "./open-loop.mjs";

// 200 tasks/s × 10 endpoints: the 2,000 deliveries/s of the target, due steadily.
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 200);
// (c): more than the system can deliver, so deliveries per second is its capacity.
const OVERLOAD_RATE = Number(process.env.BENCH_WEBHOOK_OVERLOAD_RATE ?? 300);
// (r): the limited endpoint's deliveries per second at most.
const RATE_LIMIT = Number(process.env.BENCH_WEBHOOK_RATE_LIMIT ?? 50);
// node:http with keep-alive: fetch (undici) costs this process several times the CPU per request,
// which the two cores would take from the system under test.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** POST /v1/tasks; resolves to the status (0 when the request failed). */
function createTask(gateway, key) {
  const body = JSON.stringify({ title: "Webhook benchmark task" });
  return new Promise((resolve) => {
    const req = http.request(
      `${gateway}/v1/tasks`,
      { method: "POST", agent, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
        res.on("error", () => resolve(0));
      },
    );
    req.on("error", () => resolve(0));
    req.end(body);
  });
}

const quantile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** Creates tasks at `rate` per second for `seconds` (openLoop). Answers how many were created and how many failed. */
async function steadyTasks(gateway, key, rate, seconds) {
  let created = 0;
  let failed = 0;
  await openLoop({
    rate,
    seconds,
    send: () =>
      createTask(gateway, key).then((status) => {
        if (status === 201) created += 1;
        else failed += 1;
      }),
  });
  return { created, failed };
}

/**
 * One phase: `warmup` seconds of steady load flowing straight into `duration` measured seconds
 * (no gap, so the pipeline is full when the window opens). Deliveries per second are the
 * arrivals inside the window; latencies are those of the window's events, including arrivals
 * after it (a 3 s drain), so a backlog shows as latency rather than being left out.
 */
async function phase({ gateway, key, receiver, duration, warmup, rate = RATE, others = [] }) {
  const load = steadyTasks(gateway, key, rate, warmup + duration);
  await new Promise((r) => setTimeout(r, warmup * 1000));
  await fetch(`${receiver}/stats`).then((r) => r.json());
  const from = Date.now();
  const { created, failed } = await load;
  const to = Date.now();
  await new Promise((r) => setTimeout(r, 3000));
  const { arrivals: all } = await fetch(`${receiver}/stats`).then((r) => r.json());
  // The figures are the ten endpoints' (under /ok/); the `others` prefixes only count their arrivals.
  const arrivals = all.filter(([, , , prefix]) => !others.includes(prefix));
  const counted = Object.fromEntries(
    others.map((p) => [p, all.filter(([at, , , prefix]) => prefix === p && at >= from && at < to).length / ((to - from) / 1000)]),
  );
  // Deliveries of events created in the window (arrival minus latency is the event's time).
  const window = arrivals.filter(([at, latency]) => at - latency >= from && at - latency < to);
  const inWindow = arrivals.filter(([at]) => at < to).length;
  const latencies = window.map(([, latency]) => latency).sort((a, b) => a - b);
  // Tasks created in the window, from the steady rate (the load ran warm-up + window).
  const due = Math.round((created * duration) / (warmup + duration)) * 10;
  return {
    deliveriesPerSecond: inWindow / ((to - from) / 1000),
    delivered: window.length,
    due,
    p50: quantile(latencies, 50),
    p99: quantile(latencies, 99),
    failedCreates: failed,
    others: counted,
  };
}

/** A counter's total on a process's /metrics (all its series summed). */
async function counterTotal(opsUrl, name) {
  if (!opsUrl) return Number.NaN;
  const text = await fetch(`${opsUrl}/metrics`).then((r) => r.text());
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

export async function webhookScenarios({ gateway, key, receiver, duration, warmup: httpWarmup, log, deliveryOps }) {
  let warmup = httpWarmup;
  const endpoint = async (url, extra = {}) => {
    const r = await fetch(`${gateway}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ url, event_types: ["task.created"], ...extra }),
    });
    if (r.status !== 201) throw new Error(`endpoint create failed: ${r.status} ${await r.text()}`);
    return r.json();
  };
  const remove = async (e) => {
    const r = await fetch(`${gateway}/v1/webhook-endpoints/${e.id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
    if (r.status !== 200) throw new Error(`endpoint delete failed: ${r.status} ${await r.text()}`);
  };
  const made = [];
  for (let i = 0; i < 10; i++) made.push(await endpoint(`${receiver}/ok/${i}`));
  // JIT and caches settle over seconds; a longer warm-up than the HTTP scenarios' keeps (a) fair to (b).
  warmup = Math.max(warmup, 5);
  log(`bench: webhooks (a) fan-out to 10 endpoints, ${RATE} tasks/s …`);
  const a = await phase({ gateway, key, receiver, duration, warmup });
  const limited = await endpoint(`${receiver}/limited/0`, { rate_limit: RATE_LIMIT });
  log(`bench: webhooks (r) the same plus one endpoint limited to ${RATE_LIMIT}/s …`);
  const deferredBefore = await counterTotal(deliveryOps, "tasksvc_webhook_attempts_deferred_total");
  const r = await phase({ gateway, key, receiver, duration, warmup, others: ["/limited/"] });
  r.limitedPerSecond = r.others["/limited/"];
  r.deferred = (await counterTotal(deliveryOps, "tasksvc_webhook_attempts_deferred_total")) - deferredBefore;
  // Its backlog (RATE due per second, RATE_LIMIT sent) goes with it, so (b) starts as (a) did.
  await remove(limited);
  made.push(await endpoint(`${receiver}/hang/0`));
  log(`bench: webhooks (b) the same plus one hanging endpoint …`);
  const b = await phase({ gateway, key, receiver, duration, warmup });
  log(`bench: webhooks (c) capacity: ${OVERLOAD_RATE} tasks/s, more than can be delivered …`);
  const c = await phase({ gateway, key, receiver, duration, warmup, rate: OVERLOAD_RATE });
  // The capacity phase leaves a backlog (and the hanging endpoint one that never drains):
  // deleting the endpoints deletes their deliveries, so later scenarios run on a quiet system.
  for (const e of made) await remove(e);
  return { rate: RATE, overloadRate: OVERLOAD_RATE, rateLimit: RATE_LIMIT, a, r, b, c };
}
