import { api, eventually, startReceiver, type Receiver } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareLoadTenants, prober, readTaskEvents, startMixedLoad, verify, type Attempt, type LoadTenant } from "./load.js";
import { KEEPER_SETTINGS, MONITOR_SETTINGS, startPrivateFailover, type PrivateFailover } from "./private-failover.js";
import { readyz, SERVICES, seconds, startProcessStack, type ProcessStack, type ServiceName } from "./processes.js";
import { serverPort } from "./private-services.js";

/**
 * The loss of the Postgres primary under mixed load, behind pg_auto_failover (private-failover.ts:
 * a monitor, a primary and a synchronous standby, with tuned timings) and an endpoint that follows
 * the primary, which is all the stack is given as DATABASE_URL. A webhook endpoint receives one
 * tenant's events throughout. Mid-run the primary's node is killed outright (kill -9 of its
 * keeper, its postmaster and every backend), and the monitor promotes the standby.
 *
 * Nobody restarts a service: every process must heal by itself. Afterwards nothing acknowledged is
 * lost or twice, each change has one event and each event its delivery, no request answered a 5xx
 * other than 503, every replica's /readyz answers 200 again, and requests that need each
 * service's transactions (a webhook endpoint's creation among them) work at the first attempt.
 * The error window is printed, with the failover's own timeline, for docs/operations.md.
 */
const REPLICAS: Partial<Record<ServiceName, number>> = { gateway: 2, tasks: 2 };

let cluster: PrivateFailover | undefined;
let stack: ProcessStack | undefined;
let rx: Receiver | undefined;
/** Every replica's ops port (/readyz), chosen here so the test can reach each one. */
const ops: Array<{ name: string; url: string }> = [];

beforeAll(async () => {
  cluster = await startPrivateFailover();
  // Below the ephemeral range (serverPort), and distinct: none of these is bound until its replica
  // starts (startProcessStack chooses its gateway ports around them).
  const ports = new Map<string, number>();
  for (const service of SERVICES) {
    for (let index = 0; index < (REPLICAS[service] ?? 1); index++) {
      let port = await serverPort();
      while ([...ports.values()].includes(port)) port = await serverPort();
      ports.set(`${service}#${index}`, port);
      ops.push({ name: `${service}#${index}`, url: `http://127.0.0.1:${port}` });
    }
  }
  stack = await startProcessStack({
    pgBase: cluster.url,
    replicas: REPLICAS,
    env: {
      // A request caught in the outage answers 503 after this (default 5 s).
      RPC_TIMEOUT_MS: "3000",
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      // A delivery whose outcome the failover kept from being recorded is tried again within seconds, not minutes.
      WEBHOOK_RETRY_DELAYS: "0,500ms,1s,2s,2s,2s,2s,2s,2s,2s",
      WEBHOOK_TIMEOUT_MS: "3000",
      WEBHOOK_LEASE: "5s",
    },
    replicaEnv: (service, index) => ({ OPS_PORT: String(ports.get(`${service}#${index}`)) }),
  });
  rx = await startReceiver();
}, 150_000);

afterAll(async () => {
  try {
    await stack?.stop();
  } finally {
    await rx?.close();
    await cluster?.stop();
  }
}, 120_000);

const s = seconds;

/**
 * Every replica's /readyz every 250 ms until stopped (each poll its own request, so one that hangs
 * does not delay the next): what each said and when, to print how readiness followed the outage.
 */
function watchReadiness(): { stop: () => Promise<Map<string, Array<{ at: number; status: number | string }>>> } {
  const seen = new Map<string, Array<{ at: number; status: number | string }>>(ops.map((o) => [o.name, []]));
  const polls: Array<Promise<void>> = [];
  const timer = setInterval(() => {
    for (const o of ops) {
      const at = Date.now();
      polls.push(readyz(o.url).then((status) => void seen.get(o.name)?.push({ at, status })));
    }
  }, 250);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(polls);
      for (const list of seen.values()) list.sort((a, b) => a.at - b.at);
      return seen;
    },
  };
}

/**
 * From `since`, a fresh task create every 100 ms (each its own request, never a retry, so no
 * backlog of the load's clients delays it) until one is acknowledged: when the stack took writes
 * again, to 100 ms.
 */
async function firstFreshWrite(gatewayUrls: string[], tenant: LoadTenant, since: number, timeoutMs = 60_000): Promise<number> {
  let first = Number.POSITIVE_INFINITY;
  let sent = 0;
  const inFlight: Array<Promise<void>> = [];
  while (!Number.isFinite(first) && Date.now() - since < timeoutMs) {
    const url = gatewayUrls[sent % gatewayUrls.length] as string;
    const title = `failover probe ${since} ${sent++}`;
    inFlight.push(
      fetch(`${url}/v1/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.apiKey}`, "content-type": "application/json", "idempotency-key": title.replaceAll(" ", "-") },
        body: JSON.stringify({ title }),
        signal: AbortSignal.timeout(10_000),
      })
        .then(async (res) => {
          await res.text();
          if (res.status === 201) first = Math.min(first, Date.now() - since);
        })
        .catch(() => undefined),
    );
    // The probe's pace, not a wait for anything: it measures when recovery came, to 100 ms.
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(inFlight);
  return first;
}

/**
 * After the load: requests that each need one service's database, sent once each with no retry,
 * on both gateways in turn: task creates and edits (tasks, on both replicas unless the odds are
 * 1 in 1,000), API keys (keys), plan entries (boards) and webhook endpoints (the webhooks
 * service's transaction slots).
 */
async function probe(gatewayUrls: string[], tenant: LoadTenant): Promise<{ total: number; failures: string[] }> {
  const p = prober(gatewayUrls, tenant, 10_000);
  const { send, failures } = p;
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const t = await send("POST", "/v1/tasks", { title: `after failover ${i}` });
    if (t) ids.push(String(t["id"]));
  }
  for (let i = 0; i < 4; i++) await send("PATCH", `/v1/tasks/${ids[i] ?? "T-1"}`, { status: "IN_PROGRESS" });
  for (let i = 0; i < 4; i++) await send("POST", "/v1/api-keys", { name: `after failover ${i}`, scopes: ["tasks:read"], expires_in_days: 1 });
  for (let i = 0; i < 4; i++) await send("POST", "/v1/daily-plan/entries", { date: "2026-12-02", task_id: ids[i] ?? "T-1", section: "TODO" });
  for (let i = 0; i < 4; i++) await send("POST", "/v1/webhook-endpoints", { url: `${rx?.url(`/probe-${i}`)}` });
  for (let i = 0; i < 2; i++) await send("GET", "/v1/daily-plan?date=2026-12-02");
  for (let i = 0; i < 2; i++) await send("GET", "/v1/tasks");
  return { total: p.total, failures };
}

describe("the loss of the Postgres primary, failed over by pg_auto_failover", () => {
  it("when the primary is killed (kill -9) under mixed load with a webhook endpoint and its synchronous standby is promoted, then nothing acknowledged is lost or twice, every event is published and delivered once, failures are 503 only, and every service is ready again without a restart", async () => {
    if (!stack || !cluster || !rx) throw new Error("the stack did not start");
    const st = stack;
    const receiver = rx;
    const tenants = await prepareLoadTenants(st, 2);
    const [probeTenant] = (await prepareLoadTenants(st, 1)) as [LoadTenant];
    const [hooked] = tenants as [LoadTenant];
    const gw = api(st.gatewayUrls[0] as string);
    const endpoint = await receiver.endpoint(async (url) => {
      const r = await gw.post("/v1/webhook-endpoints", { url }, { token: hooked.apiKey });
      expect(r.status, r.text).toBe(201);
      return r.body as { id: string; secret: string };
    });

    const readiness = watchReadiness();
    const load = startMixedLoad({ gatewayUrls: st.gatewayUrls, tenants, clients: 16, durationMs: 20_000 });
    let killed: { node: string; at: number; processes: number };
    let switchedAt: number;
    let fresh: number;
    try {
      await eventually(() => load.progress().acknowledged >= 150, { what: "the load to be under way", timeoutMs: 30_000 });
      killed = await cluster.killPrimary();
      const k = killed;
      const c = cluster;
      // The endpoint follows the monitor's choice: the standby, once promoted.
      switchedAt = await eventually(() => c.switches.find((x) => x.at >= k.at && x.to !== null && x.to !== k.node)?.at ?? false, {
        what: "the standby to be promoted and the endpoint to follow it",
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      fresh = await firstFreshWrite(st.gatewayUrls, probeTenant, switchedAt);
    } catch (e) {
      // A case that failed half-way must not leave its load or its polls running.
      load.stop();
      await load.done;
      await readiness.stop();
      throw e;
    }
    const result = await load.done;
    const report = await verify(st, result, { label: `kill -9 of the Postgres primary (${killed.node}), failed over by pg_auto_failover` });

    // Every event of the hooked tenant reaches its endpoint, signed. Waited for here, asserted
    // after the figures are printed (so a failure shows them too).
    const events = (await readTaskEvents(st)).filter((e) => e.organization_id === hooked.organizationId);
    const undelivered = () => {
      const got = new Set(receiver.received(endpoint.path).map((r) => r.id));
      return events.filter((e) => !got.has(e.id)).map((e) => `${e.type} ${e.id}`);
    };
    await eventually(() => undelivered().length === 0, { what: "every event of the hooked tenant delivered", timeoutMs: 45_000, intervalMs: 250 }).catch(
      () => undefined,
    );
    const delivered = receiver.received(endpoint.path);

    // Ready again, every replica, with nobody restarting anything.
    const readyNow = () => Promise.all(ops.map(async (o) => `${o.name} ${await readyz(o.url)}`));
    await eventually(async () => (await readyNow()).every((r) => r.endsWith(" 200")), {
      what: "every replica's /readyz to answer 200",
      timeoutMs: 45_000,
      intervalMs: 250,
    }).catch(() => undefined);
    const readyAtEnd = await readyNow();
    const seen = await readiness.stop();
    const probed = await probe(st.gatewayUrls, probeTenant);

    // --- figures ---------------------------------------------------------------------------------
    const k = killed;
    const failed = result.attempts.filter((a) => !a.definitive);
    const window = (list: Attempt[]) =>
      list.length === 0 ? "none" : `${s(Math.min(...list.map((a) => a.start)) - k.at)} to ${s(Math.max(...list.map((a) => a.end)) - k.at)} after the kill`;
    const inProgress = failed.filter((a) => a.status === 409);
    // Failures that ended well after the endpoint reached the new primary: what kept them failing.
    const late = failed.filter((a) => a.end > switchedAt + 1000);
    // What the replicas logged (warnings and errors) from then on: why a late request failed.
    const lateLogs = late.length
      ? ops.flatMap((o) => {
          const [service, index] = o.name.split("#") as [ServiceName, string];
          return st
            .output(service, Number(index))
            .split("\n")
            .filter((line) => {
              const t = Date.parse(/"time":"([^"]+)"/.exec(line)?.[1] ?? "");
              return t > switchedAt + 1000;
            })
            .slice(0, 3)
            .map((line) => `  ${o.name} logged: ${line.slice(0, 400)}`);
        })
      : [];
    const otherFailures = failed.filter((a) => a.status !== 409);
    const firstWrite = result.attempts
      .filter((a) => a.kind !== "read" && a.start >= k.at && a.status >= 200 && a.status < 300)
      .reduce((m, a) => Math.min(m, a.end - k.at), Number.POSITIVE_INFINITY);
    const notReady = [...seen].map(([name, list]) => {
      const after = list.filter((x) => x.at >= k.at);
      const bad = after.filter((x) => x.status !== 200);
      const lastBad = bad.at(-1);
      const back = lastBad ? after.find((x) => x.at > lastBad.at && x.status === 200) : undefined;
      return bad.length === 0
        ? `${name} 200 throughout`
        : `${name} not ready ${bad.length}× (${[...new Set(bad.map((x) => x.status))].join("/")}), 200 again ${s((back?.at ?? Number.NaN) - k.at)}`;
    });
    const ids = delivered.map((r) => r.id);
    const repeatedDeliveries = ids.length - new Set(ids).size;
    const acked = report.kinds.reduce((a, x) => a + x.acknowledged, 0);
    const lost = report.kinds.reduce((a, x) => a + x.lost, 0);
    const duplicated = report.kinds.reduce((a, x) => a + x.duplicated, 0);
    console.log(
      [
        `fault: kill -9 of the Postgres primary ${k.node} (${k.processes} processes, at ${new Date(k.at).toISOString()}) under mixed load, pg_auto_failover — acknowledged ${acked}, lost ${lost}, duplicated ${duplicated}, ` +
          `events ${report.events.stored}/${report.events.expected}, deliveries ${new Set(ids).size}/${events.length} (${repeatedDeliveries} repeated), 5xx ${result.serverErrors.total} ${JSON.stringify(result.serverErrors.byCode)}`,
        `  timings: monitor ${JSON.stringify(MONITOR_SETTINGS)}, keepers ${JSON.stringify(KEEPER_SETTINGS)}`,
        `  failover: ${cluster.history
          .filter((h) => h.at >= k.at)
          .map((h) => `+${s(h.at - k.at)} ${h.nodes}`)
          .join("; ")}`,
        `  endpoint follows the new primary ${s(switchedAt - k.at)} after the kill; a new write acknowledged ${s(fresh)} after that (${s(switchedAt - k.at + fresh)} after the kill); ` +
          `the load's first acknowledged write ${s(firstWrite)} after the kill`,
        `  error window: ${failed.length} failed attempts, ${window(failed)}; of which 5xx, network errors and timeouts ${otherFailures.length} (${window(otherFailures)}), ` +
          `409 idempotency_in_progress ${inProgress.length} (${window(inProgress)})`,
        ...(late.length
          ? [
              `  failed attempts ending over 1 s after the endpoint followed the new primary: ${late.length} (e.g. ${late
                .slice(0, 5)
                .map(
                  (a) =>
                    `${a.kind} ${a.status === -1 ? "timeout" : a.status === 0 ? "network error" : a.status} sent +${s(a.start - k.at)}, answered +${s(a.end - k.at)}`,
                )
                .join("; ")})`,
            ]
          : []),
        `  /readyz: ${notReady.join("; ")}`,
        ...(readyAtEnd.every((r) => r.endsWith(" 200")) ? [] : [`  /readyz at the end: ${readyAtEnd.join(", ")}`]),
        ...(undelivered().length ? [`  undelivered: ${undelivered().length} (e.g. ${undelivered().slice(0, 3).join(", ")})`] : []),
        ...lateLogs.slice(0, 12),
        `  probe after the load: ${probed.total - probed.failures.length}/${probed.total} at the first attempt`,
        ...probed.failures.slice(0, 5).map((f) => `  probe failed: ${f}`),
      ].join("\n"),
    );

    expect(report.problems).toEqual([]);
    expect({ lost, duplicated, events: report.events.stored }).toEqual({ lost: 0, duplicated: 0, events: report.events.expected });
    // A failover answers 503 (retry), never another 5xx.
    expect(
      Object.keys(result.serverErrors.byCode).filter((code) => !code.startsWith("503")),
      JSON.stringify(result.serverErrors),
    ).toEqual([]);
    expect(events.length).toBeGreaterThan(0);
    expect(undelivered()).toEqual([]);
    expect(delivered.filter((r) => !r.verifiedBy.includes(0)).map((r) => r.id)).toEqual([]);
    // Nobody restarted anything: no process exited, and each service's transactions work again.
    expect(st.unexpectedExits.map((e) => `${e.service}#${e.index} exit ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
    expect(readyAtEnd).toEqual(ops.map((o) => `${o.name} 200`));
    expect(probed.failures).toEqual([]);
    expect(Number.isFinite(fresh)).toBe(true);
  }, 240_000);
});
