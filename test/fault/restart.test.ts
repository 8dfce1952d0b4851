import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { taskEventsStream } from "@tasksvc/contracts";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  failureWindow,
  prepareLoadTenants,
  prober,
  startMixedLoad,
  verify,
  WRITE_KINDS,
  type LoadResult,
  type LoadTenant,
  type MixedLoad,
  type WriteKind,
} from "./load.js";
import { startPrivateNats, startPrivatePostgres, type PrivateNats, type PrivatePostgres } from "./private-services.js";
import { eventually } from "@tasksvc/testing";
import { readyz, seconds, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * Issue 9: a Postgres crash and a NATS crash under mixed load, on a Postgres and a nats-server of
 * this file's own (private-services.ts), so the test may kill them; the shared servers are never
 * touched. Nobody restarts a service by hand: every process must ride out the outage by itself
 * (no exit, and every path works again afterwards), and clients retrying each write with its
 * Idempotency-Key must end with nothing lost, nothing twice, and one event per change.
 *
 * Recovery time is measured from the moment the server accepts connections again to the first
 * acknowledged write among new requests sent every 100 ms from then on (the load's own clients are
 * busy with retries of requests caught in the outage, so their first success comes later and is
 * printed beside it), and to /readyz 200 on each gateway.
 */
let pg: PrivatePostgres | undefined;
let nats: PrivateNats | undefined;
let stack: ProcessStack;

beforeAll(async () => {
  pg = await startPrivatePostgres();
  nats = await startPrivateNats();
  stack = await startProcessStack({
    pgBase: pg.url,
    natsUrl: nats.url,
    replicas: { gateway: 2, tasks: 2, keys: 1, boards: 1 },
    // A request caught in the outage answers 503 after this (default 5 s); shorter keeps it short.
    env: { RPC_TIMEOUT_MS: "3000" },
    serviceEnv: { keys: { LOG_LEVEL: "info" }, tasks: { LOG_LEVEL: "info" }, boards: { LOG_LEVEL: "info" } },
  });
});
afterAll(async () => {
  // Whatever a failed case left down, bring it up so the stack can stop cleanly; then remove both.
  await pg?.up().catch(() => undefined);
  await nats?.up().catch(() => undefined);
  try {
    await stack?.stop();
  } finally {
    await nats?.stop();
    await pg?.stop();
  }
});

/**
 * A replica that died in one case (a failure that case reports) is started again before the next,
 * so each case starts from the whole stack; this is the only restart by hand, and only after a
 * case already failed on it.
 */
let exitsHandled = 0;
afterEach(async () => {
  if (!stack) return;
  const dead = stack.unexpectedExits.slice(exitsHandled);
  exitsHandled = stack.unexpectedExits.length;
  for (const e of dead) stack.restart(e.service, e.index);
  // (waitReady() would throw on the exit already recorded.) Services print "<name> service ready".
  for (const e of dead) {
    if (e.service === "gateway")
      await eventually(async () => (await readyz(stack.gatewayUrls[e.index] as string)) === 200, { what: `gateway#${e.index} ready`, timeoutMs: 30_000 });
    else
      await eventually(() => stack.output(e.service, e.index).includes(`${e.service} service ready`), {
        what: `${e.service}#${e.index} ready`,
        timeoutMs: 30_000,
      });
  }
});

/** How long each server stays down (at least). */
const OUTAGE_MS = 3000;

const s = seconds;

async function streamState(natsUrl: string, namespace: string): Promise<{ messages: number; lastSeq: number }> {
  const nc = await connect({ servers: natsUrl, name: "fault-restart", timeout: 3000 });
  try {
    const info = await (await jetstreamManager(nc)).streams.info(taskEventsStream(namespace));
    return { messages: info.state.messages, lastSeq: info.state.last_seq };
  } finally {
    await nc.close();
  }
}

/** The first acknowledged attempt of `kind` that started at or after `since`: ms after it, or Infinity. */
function firstSuccessOf(result: LoadResult, since: number, kind: WriteKind): number {
  const a = result.attempts.find((x) => x.kind === kind && x.start >= since && x.status >= 200 && x.status < 300);
  return a ? a.end - since : Number.POSITIVE_INFINITY;
}

/**
 * After the load: requests that each need one part of the stack, sent once each with no retry, on
 * both gateways in turn. Twenty task creates land on both tasks replicas (queue group) unless the
 * odds are 1 in 500,000, so a replica that did not recover shows here even if its twin carried the
 * load.
 */
async function probe(tenant: LoadTenant): Promise<{ ok: number; total: number; failures: string[] }> {
  const p = prober(stack.gatewayUrls, tenant, 5000);
  const { send, failures } = p;
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const t = await send("POST", "/v1/tasks", { title: `probe ${i}` });
    if (t) ids.push(String(t["id"]));
  }
  for (let i = 0; i < 6; i++) await send("PATCH", `/v1/tasks/${ids[i] ?? "T-1"}`, { status: "IN_PROGRESS" });
  for (let i = 0; i < 6; i++) await send("POST", "/v1/api-keys", { name: `probe ${i}`, scopes: ["tasks:read"], expires_in_days: 1 });
  for (let i = 0; i < 6; i++) await send("POST", "/v1/daily-plan/entries", { date: "2026-12-01", task_id: ids[i] ?? "T-1", section: "TODO" });
  for (let i = 0; i < 4; i++) await send("GET", "/v1/daily-plan?date=2026-12-01");
  return { ok: p.total - failures.length, total: p.total, failures };
}

/**
 * From `since`, a fresh task create every 100 ms (each its own request, never a retry, so no
 * backlog of the load's clients delays it) until one is acknowledged: the recovery time, measured
 * as the end of the first acknowledged one. Acknowledged titles are returned for a stored check.
 */
async function firstFreshWrite(
  tenant: LoadTenant,
  since: number,
  timeoutMs = 30_000,
): Promise<{ ms: number; sent: number; acknowledged: string[]; timeline: string[] }> {
  const acknowledged: string[] = [];
  const timeline: string[] = [];
  let first = Number.POSITIVE_INFINITY;
  let sent = 0;
  const inFlight: Array<Promise<void>> = [];
  while (!Number.isFinite(first) && Date.now() - since < timeoutMs) {
    const url = stack.gatewayUrls[sent % stack.gatewayUrls.length] as string;
    const title = `recovery probe ${since} ${sent++}`;
    const at = Date.now();
    inFlight.push(
      fetch(`${url}/v1/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.apiKey}`, "content-type": "application/json", "idempotency-key": title.replaceAll(" ", "-") },
        body: JSON.stringify({ title }),
        signal: AbortSignal.timeout(10_000),
      })
        .then(async (res) => {
          const text = await res.text();
          if (timeline.length < 12)
            timeline.push(
              `+${at - since} ms → ${res.status} ${res.status >= 300 ? ((JSON.parse(text) as { code?: string }).code ?? "") : ""} in ${Date.now() - at} ms`,
            );
          if (res.status === 201) {
            acknowledged.push(title);
            first = Math.min(first, Date.now() - since);
          }
        })
        .catch(() => undefined),
    );
    // The probe's pace, not a wait for anything: it measures when recovery came, to 100 ms.
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(inFlight);
  return { ms: first, sent, acknowledged, timeline };
}

/**
 * /readyz of one gateway polled every 100 ms from `since` (each poll its own request, so one that
 * hangs does not delay the next) until one answers 200: when it did, and how many polls hung.
 */
async function firstReady(url: string, since: number, timeoutMs = 30_000): Promise<{ ms: number; hung: number }> {
  let first = Number.POSITIVE_INFINITY;
  let hung = 0;
  const polls: Array<Promise<void>> = [];
  while (!Number.isFinite(first) && Date.now() - since < timeoutMs) {
    polls.push(
      readyz(url).then((r) => {
        if (r === 200) first = Math.min(first, Date.now() - since);
        else if (r === "timeout") hung++;
      }),
    );
    // The probe's pace, not a wait for anything: it measures when recovery came, to 100 ms.
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(polls);
  return { ms: first, hung };
}

interface RestartCase {
  name: string;
  /** Crashes the server. */
  down(): Promise<void>;
  /** Starts it again (resolves once it accepts connections). */
  up(): Promise<void>;
}

const cases: RestartCase[] = [
  {
    name: "Postgres crash (pg_ctl stop -m immediate, then start)",
    down: async () => (pg as PrivatePostgres).down("immediate"),
    up: async () => (pg as PrivatePostgres).up(),
  },
  {
    name: "NATS crash (kill -9 nats-server, then start on the same store dir)",
    down: async () => (nats as PrivateNats).down("SIGKILL"),
    up: async () => (nats as PrivateNats).up(),
  },
];

/** One case: crash under load, start again, then measure and verify (see the file comment). */
async function runCase(c: RestartCase, load: MixedLoad, probeTenant: LoadTenant, exitsBefore: number): Promise<void> {
  await eventually(() => load.progress().acknowledged >= 150, { what: "the load to be under way", timeoutMs: 20_000 });
  const streamBefore = await streamState(stack.natsUrl, stack.namespace);
  const downAt = Date.now();
  await c.down();

  // Stay down for an outage of a realistic length (a restart or a failover takes seconds; the
  // drivers' reconnect backoff grows meanwhile) and until the clients noticed; then look at
  // what /readyz says.
  await eventually(() => Date.now() - downAt >= OUTAGE_MS && failureWindow(load, downAt).failures >= 10, {
    what: "requests to fail for 3 s",
    timeoutMs: 20_000,
  });
  const readyDuringOutage = await Promise.all(stack.gatewayUrls.map(readyz));

  const upStarted = Date.now();
  await c.up();
  const upAt = Date.now();
  // All three from the same moment, side by side.
  const freshWrite = firstFreshWrite(probeTenant, upAt);
  const readinessPolls = Promise.all(stack.gatewayUrls.map((url) => firstReady(url, upAt)));
  const firstWrite = await load
    .firstSuccess(upAt, { kinds: WRITE_KINDS }, 30_000)
    .then((t) => t - upAt)
    .catch(() => Number.POSITIVE_INFINITY);
  const readiness = await readinessPolls;
  const readyAfter = readiness.map((r) => r.ms);

  const fresh = await freshWrite;
  const result = await load.done;
  const streamAfter = await streamState(stack.natsUrl, stack.namespace);
  const perKind = Object.fromEntries(WRITE_KINDS.map((k) => [k, firstSuccessOf(result, upAt, k)])) as Record<WriteKind, number>;
  const everyKind = Math.max(...Object.values(perKind));
  const window = failureWindow(result, downAt);
  const probed = await probe(probeTenant);
  const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
  const freshStored =
    await sql`select count(*)::int as n from tasks.tasks where organization_id = ${probeTenant.organizationId} and title = any(${fresh.acknowledged})`
      .then((r) => Number(r[0]?.["n"]))
      .finally(() => sql.end({ timeout: 1 }));
  const report = await verify(stack, result, { label: c.name });
  const acked = report.kinds.reduce((a, k) => a + k.acknowledged, 0);
  const lost = report.kinds.reduce((a, k) => a + k.lost, 0);
  const duplicated = report.kinds.reduce((a, k) => a + k.duplicated, 0);
  // Retries refused as "in progress" after the restart: keys whose gateway claim could not be
  // released while Postgres was down wait for the lease (RPC_TIMEOUT_MS + 10 s) to run out.
  const inProgress = result.attempts.filter((a) => a.start >= upAt && a.status === 409);
  const lastInProgress = inProgress.reduce((m, a) => Math.max(m, a.end - upAt), 0);
  console.log(
    [
      `fault: ${c.name} under load — acknowledged ${acked}, lost ${lost}, duplicated ${duplicated}, events ${report.events.stored}/${report.events.expected}, ` +
        `recovery ${s(fresh.ms)} (first new write acknowledged after the server accepts connections again), /readyz 200 after ${readyAfter.map(s).join(" / ")}` +
        (readiness.some((r) => r.hung) ? ` (polls that hung over 2 s meanwhile: ${readiness.map((r) => r.hung).join(" / ")})` : ""),
      `  outage: down ${s(upStarted - downAt)} (crash → start), start took ${s(upAt - upStarted)}, /readyz during it ${readyDuringOutage.join(" / ")}; ` +
        `requests failing for ${s(window.ms)} after the crash (${window.failures} failed attempts, ${result.serverErrors.total} 5xx answers ${JSON.stringify(result.serverErrors.byCode)})`,
      `  the load's retrying clients: first write ${s(firstWrite)} after the restart, every kind ${s(everyKind)} (${WRITE_KINDS.map((k) => `${k} ${s(perKind[k])}`).join(", ")}); ` +
        `409 in progress after the restart ${inProgress.length}${inProgress.length ? ` (the last ${s(lastInProgress)} after it)` : ""}`,
      `  new writes after the restart (send time → answer): ${fresh.timeline.join("; ")}`,
      `  stream ${streamBefore.messages} messages before the crash, ${streamAfter.messages} after the load; probe after the load ${probed.ok}/${probed.total} (no retries)`,
      ...probed.failures.slice(0, 5).map((f) => `  probe failed: ${f}`),
    ].join("\n"),
  );

  expect(report.problems).toEqual([]);
  expect({ freshAcknowledged: fresh.acknowledged.length, stored: freshStored }).toEqual({
    freshAcknowledged: fresh.acknowledged.length,
    stored: fresh.acknowledged.length,
  });
  expect({ lost, duplicated, events: report.events.stored }).toEqual({ lost: 0, duplicated: 0, events: report.events.expected });
  // Every service recovered by itself: no exit, every path answers again, and readiness too.
  expect(stack.unexpectedExits.slice(exitsBefore).map((e) => `${e.service}#${e.index} exit ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
  expect(probed.failures).toEqual([]);
  // (Not every kind: a retried key whose claim is stuck may outlast the load; see inProgress.)
  expect({ newWrite: Number.isFinite(fresh.ms), loadWrite: Number.isFinite(firstWrite), readyz: readyAfter.every(Number.isFinite) }).toEqual({
    newWrite: true,
    loadWrite: true,
    readyz: true,
  });
  // While a dependency is down, /readyz says so (503), so a load balancer takes the replica out.
  expect(readyDuringOutage).toEqual(stack.gatewayUrls.map(() => 503));
  // JetStream kept its stream (file store) across the restart.
  expect(streamAfter.messages).toBeGreaterThanOrEqual(streamBefore.messages);
}

describe("infrastructure restarts under mixed load", () => {
  for (const c of cases) {
    it(`when the ${c.name} happens under mixed load, then every service recovers by itself, no acknowledged write is lost or duplicated and each change has exactly one event`, async () => {
      const exitsBefore = stack.unexpectedExits.length;
      const tenants = await prepareLoadTenants(stack, 2);
      const [probeTenant] = (await prepareLoadTenants(stack, 1)) as [LoadTenant];
      const load = startMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants, clients: 16, durationMs: 12_000 });
      try {
        await runCase(c, load, probeTenant, exitsBefore);
      } finally {
        // A case that failed half-way must not leave its load running or its server down.
        load.stop();
        await c.up().catch(() => undefined);
        await load.done;
      }
    });
  }
});
