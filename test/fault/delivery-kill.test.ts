import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { webhookJobsStream } from "@tasksvc/contracts";
import { api, eventually, startReceiver, type Receiver } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareLoadTenants, type LoadTenant } from "./load.js";
import { seconds as s, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * kill -9 of the webhook delivery worker, twice, under a steady stream of deliveries (4
 * endpoints, 1,200 deliveries), with the default delivery settings. At each kill the receiver
 * holds its calls open, so the worker surely dies mid-call. Its attempts must be made again soon,
 * and only because of the kill: every delivery is recorded as delivered within 60 s of the last
 * kill (about 20 s here: another worker takes a dead one's jobs within 10 s, and makes an attempt
 * again once its call window, the call timeout plus 5 s, has passed; 30 s before call windows,
 * when only JetStream's ack wait brought the jobs back and the two-minute lease was the backstop),
 * and no delivery reaches the receiver twice without a kill between the two calls.
 *
 * The test plays the orchestrator: each killed worker is started again at once.
 */
const ENDPOINTS = 4;
const TASKS = 300;
const PER_BATCH = 10;

let stack: ProcessStack;
let rx: Receiver;
let sql: postgres.Sql;

beforeAll(async () => {
  stack = await startProcessStack({
    env: { WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" },
  });
  rx = await startReceiver();
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
}, 120_000);
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
  await rx?.close();
});

describe("kill -9 of the webhook delivery worker", () => {
  it(`when the delivery worker is killed with SIGKILL twice while ${ENDPOINTS * TASKS} deliveries flow and started again, then every delivery arrives within 60 s of the last kill`, async () => {
    const [tenant] = (await prepareLoadTenants(stack, 1)) as [LoadTenant];
    const gw = api(stack.gatewayUrls[0] as string);
    const auth = { token: tenant.apiKey };
    const endpoints: Array<{ id: string; secret: string; path: string }> = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      endpoints.push(
        await rx.endpoint(async (url) => {
          const r = await gw.post("/v1/webhook-endpoints", { url, event_types: ["task.created"] }, auth);
          expect(r.status, r.text).toBe(201);
          return r.body as { id: string; secret: string };
        }),
      );
    }
    // While set, the receiver holds calls open: the worker is then surely mid-call when killed.
    let holding = false;
    for (const e of endpoints) rx.answer(e.path, () => (holding ? { hold: true } : { status: 200 }));
    const received = () => endpoints.reduce((n, e) => n + new Set(rx.received(e.path).map((r) => r.id)).size, 0);
    const held = () => endpoints.reduce((n, e) => n + rx.holding(e.path), 0);

    // The load: batches of task creates, one after another, each event a delivery per endpoint.
    const producing = (async () => {
      for (let b = 0; b < TASKS / PER_BATCH; b++) {
        const operations = Array.from({ length: PER_BATCH }, (_x, i) => ({ method: "create", body: { title: `kill ${b}.${i}` } }));
        const r = await gw.post("/v1/tasks/batch", { operations }, { ...auth, headers: { "idempotency-key": `delivery-kill-${b}` } });
        expect(r.status, r.text).toBe(200);
        // The load's pace (not a wait for anything): the deliveries keep coming through both kills.
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    producing.catch(() => undefined);

    const total = ENDPOINTS * TASKS;
    const kills: Array<{ at: number; gone: number; held: number; received: number }> = [];
    for (const share of [1 / 4, 1 / 2]) {
      await eventually(() => received() >= total * share, { what: `${Math.round(share * 100)}% delivered`, timeoutMs: 60_000, intervalMs: 20 });
      holding = true;
      await eventually(() => held() >= 3, { what: "calls held open", timeoutMs: 20_000, intervalMs: 5 });
      const at = Date.now();
      const inFlight = held();
      await stack.kill("delivery", 0, "SIGKILL");
      kills.push({ at, gone: Date.now(), held: inFlight, received: received() });
      holding = false;
      rx.release(200);
      stack.restart("delivery", 0);
    }
    await producing;
    const lastKill = (kills.at(-1) as { at: number }).at;

    // Done means recorded: a call held open when its worker died reached the receiver unanswered.
    const succeeded = async () => Number((await sql`select count(*)::int as n from webhooks.deliveries where state = 'SUCCEEDED'`)[0]?.["n"]);
    let doneAt = Number.POSITIVE_INFINITY;
    await eventually(async () => received() >= total && (await succeeded()) >= total, {
      what: "every delivery",
      timeoutMs: Math.max(1000, lastKill + 60_000 - Date.now()),
      intervalMs: 100,
    })
      .then(() => {
        doneAt = Date.now();
      })
      .catch(() => undefined);
    const deliveries = endpoints.reduce((n, e) => n + rx.received(e.path).length, 0);
    // A second call of one delivery must follow a kill that cut the first one's worker short: two
    // calls with no kill between them are a duplicate no crash explains.
    const needless = endpoints.flatMap((e) => {
      const times = new Map<string, number[]>();
      for (const r of rx.received(e.path)) times.set(r.id, [...(times.get(r.id) ?? []), r.at]);
      return [...times].filter(([, at]) => at.some((t, i) => i > 0 && !kills.some((k) => k.gone >= (at[i - 1] as number) && k.at <= t))).map(([id]) => id);
    });
    const stuck = await sql<{ state: string; n: number; lease_left: string | null; attempts: number }[]>`
      select state, count(*)::int as n, max(lease_until - now())::text as lease_left, max(attempt_count)::int as attempts
      from webhooks.deliveries where state <> 'SUCCEEDED' group by state`;
    const nc = await connect({ servers: stack.natsUrl });
    const info = await (await jetstreamManager(nc)).consumers.info(webhookJobsStream(stack.namespace), `${stack.namespace}_delivery`);
    await nc.close();
    console.log(
      `fault: kill -9 of the delivery worker twice under ${total} deliveries — ` +
        kills.map((k, i) => `kill ${i + 1} with ${k.held} calls held, ${k.received} delivered`).join("; ") +
        `; all delivered ${s(doneAt - lastKill)} after the last kill (${received()}/${total}, ${deliveries - received()} repeated, ${needless.length} of them with no kill between); ` +
        `not succeeded: ${JSON.stringify(stuck)}; jobs consumer: ack pending ${info.num_ack_pending}, pending ${info.num_pending}, redelivered ${info.num_redelivered}`,
    );

    expect(received()).toBe(total);
    expect(needless).toEqual([]);
    expect(Number.isFinite(doneAt)).toBe(true);
    for (const e of endpoints)
      expect(
        rx
          .received(e.path)
          .filter((r) => !r.verifiedBy.includes(0))
          .map((r) => r.id),
      ).toEqual([]);
    expect(stack.unexpectedExits.map((e) => `${e.service}#${e.index} exit ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
  }, 180_000);
});
