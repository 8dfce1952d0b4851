import { jetstreamManager, type ClusterInfo, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { taskEventsStream, webhookJobsStream } from "@tasksvc/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatReport, prepareLoadTenants, startMixedLoad, verify, WRITE_KINDS, type LoadTenant } from "./load.js";
import { startPrivateNatsCluster, type PrivateNatsCluster } from "./private-services.js";
import { eventually } from "@tasksvc/testing";
import { startProcessStack, type ProcessStack, type ServiceName } from "./processes.js";

/**
 * Issue 13 item 6: a NATS cluster for real. Three local nats-servers clustered with JetStream
 * (test/fault/private-services.ts startPrivateNatsCluster), the whole stack as processes on them
 * with NATS_STREAM_REPLICAS=3, each process connected to a server of its own (its NATS_URL names
 * one server; the client learns the others from the cluster and fails over to them), so the two
 * tasks replicas and the two gateways sit on different servers and a request, its reply and the
 * read cache's invalidation broadcast cross routes.
 *
 * 1. Streams (task events, webhook jobs, the attachments bucket) and the durable consumers report
 *    3 replicas, and each process is connected where it was sent.
 * 2. Read-your-writes across servers: PATCH through one gateway, then at once GET through the
 *    other, many times, every read must show the version just written (decision 0017).
 * 3. kill -9 of the task-event stream's leader under mixed load (with the read-your-writes probe
 *    running too), started again later on the same store: no acknowledged write lost or
 *    duplicated, exactly one event per change, the restarted server catches up.
 *
 * The shared servers (127.0.0.1:5432 and :4222) are not used for NATS: everything NATS is the
 * private cluster's; the database is the shared Postgres's, a database of this run's own.
 */
let cluster: PrivateNatsCluster;
let stack: ProcessStack;
let nc: NatsConnection;
let jsm: JetStreamManager;

/** Each process's own server (index into the cluster): tasks#0 and tasks#1 apart, gateways apart. */
const HOME: Record<ServiceName, number> = { tasks: 0, gateway: 2, keys: 1, boards: 2, webhooks: 0, notifications: 1, delivery: 1 };
const home = (service: ServiceName, index: number) => (HOME[service] + index) % 3;

beforeAll(async () => {
  cluster = await startPrivateNatsCluster(3);
  stack = await startProcessStack({
    natsUrl: cluster.urls,
    replicas: { gateway: 2, tasks: 2, keys: 1, boards: 1, webhooks: 1, delivery: 1 },
    env: { NATS_STREAM_REPLICAS: "3", RPC_TIMEOUT_MS: "3000" },
    replicaEnv: (service, index) => ({ NATS_URL: cluster.url[home(service, index)] as string }),
    // All at once, as Kubernetes starts them: replicas creating one stream together on a cluster
    // can time out, which ensureStream retries (libs/nats streams.ts).
  });
  nc = await connect({ servers: cluster.urls.split(","), name: "fault-cluster", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  // Every server up again, so the stack and the namespace clean-up find JetStream whole.
  for (let i = 0; i < 3; i++) await cluster?.start(i).catch(() => undefined);
  try {
    await nc?.close();
    await stack?.stop();
  } finally {
    await cluster?.stop();
  }
});

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Which server each named client connection is on (from every server's /connz). */
async function connections(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i < 3; i++) {
    if (!cluster.running(i)) continue;
    const res = await fetch(`http://127.0.0.1:${cluster.monitorPorts[i]}/connz?limit=1000`, { signal: AbortSignal.timeout(2000) });
    const body = (await res.json()) as { connections?: Array<{ name?: string }> };
    for (const c of body.connections ?? []) if (c.name) (out[c.name] ??= []).push(cluster.names[i] as string);
  }
  return out;
}

async function gw(
  i: number,
  method: string,
  path: string,
  tenant: LoadTenant,
  body?: unknown,
  idempotencyKey?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${stack.gatewayUrls[i]}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${tenant.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

interface RywFigures {
  writes: number;
  reads: number;
  stale: number;
  /** Attempts that failed (network, 5xx): not compared. */
  failed: number;
  samples: string[];
}

/**
 * Read-your-writes across gateways and servers: `loops` tasks, each its own loop: warm the caches
 * (a GET through the reading gateway, twice, so both tasks replicas likely hold a copy), PATCH the
 * title through one gateway, then at once GET through the other; the read must show that title.
 * The writing and reading gateways swap every round. Runs until `stopAt(figures so far)` says so.
 */
async function readYourWrites(tenant: LoadTenant, loops: number, stopAt: (f: RywFigures) => boolean): Promise<RywFigures> {
  const f: RywFigures = { writes: 0, reads: 0, stale: 0, failed: 0, samples: [] };
  const ids: string[] = [];
  for (let i = 0; i < loops; i++) {
    // Retried with its Idempotency-Key while the stack is busy (a 503 under load is an answer to retry).
    const key = `ryw-${tenant.organizationId}-${i}`;
    let id = "";
    await eventually(
      async () => {
        const t = await gw(0, "POST", "/v1/tasks", tenant, { title: `ryw ${i} start` }, key);
        if (t.status === 201) id = String(t.json["id"]);
        return id !== "";
      },
      { what: `task ${i} of the read-your-writes probe`, timeoutMs: 30_000, intervalMs: 100 },
    );
    ids.push(id);
  }
  await Promise.all(
    ids.map(async (id, loop) => {
      for (let round = 0; !stopAt(f); round++) {
        const [w, r] = round % 2 === 0 ? [0, 1] : [1, 0];
        const title = `ryw ${loop} round ${round}`;
        try {
          await gw(r, "GET", `/v1/tasks/${id}`, tenant);
          await gw(r, "GET", `/v1/tasks/${id}`, tenant);
          const p = await gw(w, "PATCH", `/v1/tasks/${id}`, tenant, { title });
          if (p.status !== 200) {
            f.failed++;
            continue;
          }
          f.writes++;
          const g = await gw(r, "GET", `/v1/tasks/${id}`, tenant);
          if (g.status !== 200) {
            f.failed++;
            continue;
          }
          f.reads++;
          if (g.json["title"] !== title) {
            f.stale++;
            if (f.samples.length < 5) f.samples.push(`${id}: wrote "${title}" via gateway#${w}, read "${String(g.json["title"])}" via gateway#${r}`);
          }
        } catch {
          f.failed++;
        }
      }
    }),
  );
  return f;
}

describe("a three-server NATS cluster with streams at 3 replicas", () => {
  it("when the stack runs on a 3-server cluster with NATS_STREAM_REPLICAS=3, then the streams, the bucket and the durable consumers have 3 replicas and the processes sit on different servers", async () => {
    const streams = [taskEventsStream(stack.namespace), webhookJobsStream(stack.namespace), `OBJ_${stack.namespace}_attachments`];
    const consumers: Array<[string, string]> = [
      [taskEventsStream(stack.namespace), `${stack.namespace}_webhooks_fanout`],
      [webhookJobsStream(stack.namespace), `${stack.namespace}_delivery`],
    ];
    // The peers of a replicated asset: its leader and the other replicas (a fresh one may list
    // every peer while its leader is not elected yet: wait for the leader).
    const peersOf = (c: ClusterInfo | undefined) => new Set([c?.leader ?? "", ...(c?.replicas ?? []).map((p) => p.name)].filter(Boolean)).size;
    // Consumers are made by their services once the stream is there: wait for them and their leaders.
    await eventually(async () => (await Promise.all(consumers.map(([st, c]) => jsm.consumers.info(st, c)))).every((i) => (i.cluster?.leader ?? "") !== ""), {
      what: "the durable consumers and their leaders",
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const streamFigures = await Promise.all(
      streams.map(async (name) => {
        const info = await jsm.streams.info(name);
        return { name, num_replicas: info.config.num_replicas, peers: peersOf(info.cluster), leader: info.cluster?.leader ?? "" };
      }),
    );
    const consumerFigures = await Promise.all(
      consumers.map(async ([st, name]) => {
        const info = await jsm.consumers.info(st, name);
        return { name, num_replicas: info.config.num_replicas ?? 0, peers: peersOf(info.cluster), leader: info.cluster?.leader ?? "" };
      }),
    );
    const conns = await connections();
    // What the tasks service reads to check its cache hits (decision 0017): a cluster says so.
    expect(nc.info?.cluster).toBeTruthy();
    console.log(
      [
        `fault: cluster of ${cluster.names.join(", ")} (meta leader ${await cluster.metaLeader(0)})`,
        ...streamFigures.map((x) => `  stream ${x.name}: num_replicas ${x.num_replicas}, peers ${x.peers}, leader ${x.leader}`),
        ...consumerFigures.map((x) => `  consumer ${x.name}: num_replicas ${x.num_replicas} (0 = the stream's), peers ${x.peers}, leader ${x.leader}`),
        `  connections: ${Object.entries(conns)
          .filter(([n]) => n !== "fault-cluster")
          .map(([n, servers]) => `${n} on ${servers.join("+")}`)
          .join(", ")}`,
      ].join("\n"),
    );
    for (const x of streamFigures) expect({ name: x.name, num_replicas: x.num_replicas, peers: x.peers }).toEqual({ name: x.name, num_replicas: 3, peers: 3 });
    // A durable consumer inherits the stream's replicas (num_replicas 0): 3 peers.
    for (const x of consumerFigures) expect({ name: x.name, peers: x.peers }).toEqual({ name: x.name, peers: 3 });
    // Both tasks replicas and both gateways are on servers of their own (the names are the services').
    expect([...(conns["tasks"] ?? [])].sort()).toEqual([cluster.names[home("tasks", 0)], cluster.names[home("tasks", 1)]].sort());
    expect([...(conns["gateway"] ?? [])].sort()).toEqual([cluster.names[home("gateway", 0)], cluster.names[home("gateway", 1)]].sort());
  });

  it("when a task is written through one gateway and read at once through the other, with the tasks replicas on different servers, then every read shows the version just written", async () => {
    const [tenant] = (await prepareLoadTenants(stack, 1)) as [LoadTenant];
    const started = Date.now();
    // At least 8 s and 250 reads: on a busy machine the rounds are slower, and the probe runs longer
    // rather than reading less (at most a minute).
    const f = await readYourWrites(tenant, 8, (so) => (Date.now() - started > 8_000 && so.reads >= 250) || Date.now() - started > 60_000);
    console.log(
      `fault: read-your-writes across servers — ${f.writes} writes each read at once through the other gateway: ${f.reads} reads, stale ${f.stale}, failed attempts ${f.failed} in ${s(Date.now() - started)}` +
        (f.samples.length ? `\n  ${f.samples.join("\n  ")}` : ""),
    );
    expect(f.samples).toEqual([]);
    expect(f.stale).toBe(0);
    expect(f.reads).toBeGreaterThan(200);
  });

  it("when the task-event stream's leader is killed with SIGKILL under mixed load and started again, then no acknowledged write is lost or duplicated, each change has exactly one event and every read shows the latest write", async () => {
    const exitsBefore = stack.unexpectedExits.length;
    const tenants = await prepareLoadTenants(stack, 2);
    const [rywTenant] = (await prepareLoadTenants(stack, 1)) as [LoadTenant];
    const stream = taskEventsStream(stack.namespace);
    const load = startMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants, clients: 16, durationMs: 30_000 });
    let stopRyw = false;
    const ryw = readYourWrites(rywTenant, 4, () => stopRyw);
    // Awaited after the load; a failure meanwhile is not an unhandled rejection.
    ryw.catch(() => undefined);
    let killed = -1;
    let killAt = 0;
    let startAt = 0;
    let newLeader = "";
    let leaderAfterMs = 0;
    let startMs = 0;
    let ackedWhileDown = 0;
    // Polls during the election answer fast or not at all: a short timeout keeps the figure honest.
    const quickJsm = await jetstreamManager(nc, { timeout: 1000 });
    let caughtUpMs = 0;
    try {
      await eventually(() => load.progress().acknowledged >= 150, { what: "the load to be under way", timeoutMs: 20_000 });
      const leader = (await jsm.streams.info(stream)).cluster?.leader ?? "";
      killed = cluster.indexOf(leader);
      expect(killed).toBeGreaterThanOrEqual(0);
      const before = load.progress().acknowledged;
      killAt = Date.now();
      await cluster.kill(killed, "SIGKILL");
      // A new leader is elected among the other two; writes go on meanwhile.
      const electing = Date.now();
      await eventually(
        async () => {
          newLeader = (await quickJsm.streams.info(stream)).cluster?.leader ?? "";
          return newLeader !== "" && newLeader !== leader;
        },
        { what: "a new leader of the task-event stream", timeoutMs: 30_000, intervalMs: 100 },
      );
      leaderAfterMs = Date.now() - electing;
      await eventually(() => load.progress().acknowledged >= before + 200, { what: "writes acknowledged while the server is down", timeoutMs: 30_000 });
      ackedWhileDown = load.progress().acknowledged - before;
      startAt = Date.now();
      await cluster.start(killed);
      startMs = Date.now() - startAt;
      // The restarted server catches up with the stream (its replica current again).
      const catchingUp = Date.now();
      await eventually(
        async () => {
          const info = await jsm.streams.info(stream);
          const peer = [...(info.cluster?.replicas ?? [])].find((p) => p.name === leader);
          return info.cluster?.leader !== leader ? peer?.current === true && !peer.offline : true;
        },
        { what: "the restarted server to be current on the task-event stream", timeoutMs: 30_000, intervalMs: 100 },
      );
      caughtUpMs = Date.now() - catchingUp;
      const recovered = load.progress().acknowledged;
      await eventually(() => load.progress().acknowledged >= recovered + 150, { what: "load after the restart", timeoutMs: 30_000 });
    } finally {
      load.stop();
      stopRyw = true;
      if (killed >= 0) await cluster.start(killed).catch(() => undefined);
    }
    const result = await load.done;
    const f = await ryw;
    const report = await verify(stack, result, { label: `kill -9 nats-server ${cluster.names[killed]} (task-event stream leader) of 3`, print: false });
    const acked = report.kinds.reduce((a, k) => a + k.acknowledged, 0);
    const lost = report.kinds.reduce((a, k) => a + k.lost, 0);
    const duplicated = report.kinds.reduce((a, k) => a + k.duplicated, 0);
    const info = await jsm.streams.info(stream);
    const peers = [
      info.cluster?.leader ?? "",
      ...(info.cluster?.replicas ?? []).map((p) => `${p.name}${p.current ? "" : " (behind)"}${p.offline ? " (offline)" : ""}`),
    ];
    console.log(
      [
        formatReport(report, result),
        `fault: kill -9 nats-server ${cluster.names[killed]} (leader of ${stream}) of 3 under mixed load — acknowledged ${acked}, lost ${lost}, duplicated ${duplicated}, ` +
          `events ${report.events.stored}/${report.events.expected}; new leader ${newLeader} after ${s(leaderAfterMs)}, ${ackedWhileDown} writes acknowledged while it was down, ` +
          `down ${s(startAt - killAt)} (kill → start), start took ${s(startMs)}, current again ${s(caughtUpMs)} after it; ` +
          `stream now ${info.state.messages} messages on ${peers.join(", ")}; writes per kind: ${WRITE_KINDS.map((k) => `${k} ${report.kinds.find((x) => x.kind === k)?.acknowledged ?? 0}`).join(", ")}`,
        `fault: read-your-writes through it — ${f.writes} writes each read at once through the other gateway: ${f.reads} reads, stale ${f.stale}, failed attempts ${f.failed}` +
          (f.samples.length ? `\n  ${f.samples.join("\n  ")}` : ""),
      ].join("\n"),
    );

    expect(report.problems).toEqual([]);
    expect({ lost, duplicated, events: report.events.stored }).toEqual({ lost: 0, duplicated: 0, events: report.events.expected });
    expect(f.samples).toEqual([]);
    expect(f.stale).toBe(0);
    expect(stack.unexpectedExits.slice(exitsBefore).map((e) => `${e.service}#${e.index} exit ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
  });
});
