import { api, eventually, openSse, type SseStream } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadTenant, prepareLoadTenants } from "./load.js";
import { startProcessStack, type ProcessStack } from "./processes.js";

/**
 * Live event streams across a gateway that dies: clients hold streams on gateway #0 while tasks
 * are written at a steady rate through gateway #1; gateway #0 is killed with SIGKILL (or stopped
 * with SIGTERM), and each client reconnects to the other replica with Last-Event-ID. Every
 * client must end with every event of its organization exactly once, in the stream's order.
 */
let stack: ProcessStack;
let sql: postgres.Sql;

beforeAll(async () => {
  // A shutdown delay, so that a stopping gateway is seen not ready while its streams are still open.
  stack = await startProcessStack({ replicas: { gateway: 2, tasks: 1, keys: 1, boards: 1 }, env: { SHUTDOWN_DELAY: "2s" } });
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
});

async function streamOrder(org: string): Promise<string[]> {
  const rows = await sql<Array<{ event_id: string }>>`select event_id from tasks.event_stream where organization_id = ${org} order by stream_seq`;
  return rows.map((r) => r.event_id);
}

/** A client that keeps one stream open on `urls[at]` and reconnects to the next URL with Last-Event-ID when it ends. */
function follower(tenant: LoadTenant, urls: string[], at: number) {
  const received: string[] = [];
  const connections: SseStream[] = [];
  let stopped = false;
  const connect = async (index: number): Promise<void> => {
    for (let attempt = 0; !stopped; attempt++) {
      const url = urls[(index + attempt) % urls.length] as string;
      const last = received.at(-1);
      const s = await openSse(`${url}/v1/events/stream`, {
        token: tenant.apiKey,
        ...(last === undefined ? {} : { lastEventId: last }),
        onMessage: (m) => received.push(m.id),
      }).catch(() => undefined);
      if (s?.status !== 200) {
        // A client's pause before it tries again, not a wait for anything.
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      connections.push(s);
      await s.closed(600_000).catch(() => undefined);
      if (stopped) return;
      // Ended by the server (or its death): resume on the next replica, as a load balancer would send it.
      return connect((index + attempt + 1) % urls.length);
    }
  };
  const running = connect(at);
  return {
    received,
    connections,
    async stop() {
      stopped = true;
      for (const c of connections) c.close();
      await running;
    },
  };
}

/** Writes tasks for each tenant at about `perSecond` in all, through `url`, until stopped. */
function writer(tenants: LoadTenant[], url: string, perSecond: number) {
  const gw = api(url);
  let stopped = false;
  let written = 0;
  const running = (async () => {
    while (!stopped) {
      const started = Date.now();
      await Promise.all(
        tenants.map(async (t) => {
          const r = await gw.post("/v1/tasks", { title: `live ${written}` }, { token: t.apiKey });
          if (r.status === 201) written++;
        }),
      );
      // The writer's pace, not a wait for anything.
      await new Promise((r) => setTimeout(r, Math.max(0, (1000 * tenants.length) / perSecond - (Date.now() - started))));
    }
  })();
  return {
    get written() {
      return written;
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}

describe("a gateway that dies under open live event streams", () => {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`when gateway #0 gets ${signal} while streams are open on it, then every client resumes on gateway #1 with no event missing and none twice`, async () => {
      const tenants = await prepareLoadTenants(stack, 2);
      const urls = stack.gatewayUrls;
      const followers = tenants.flatMap((t) => [follower(t, urls, 0), follower(t, urls, 0)]);
      await eventually(() => followers.every((f) => f.connections.length === 1), { timeoutMs: 20_000, what: "every stream to open" });
      const w = writer(tenants, urls[1] as string, 60);
      await eventually(() => followers.every((f) => f.received.length >= 30), { timeoutMs: 60_000, what: "events to arrive on every stream" });

      if (signal === "SIGTERM") {
        const stopping = stack.kill("gateway", 0, "SIGTERM");
        // Not ready first, streams still open: a load balancer stops sending new clients here.
        await eventually(async () => (await fetch(`${urls[0]}/readyz`)).status === 503, { timeoutMs: 10_000, what: "gateway #0 to say it is not ready" });
        expect(followers.every((f) => !f.connections[0]?.ended)).toBe(true);
        await stopping;
        // Ended cleanly, each told to resume.
        for (const f of followers) expect(f.connections[0]?.comments.join("\n")).toContain("reconnect with Last-Event-ID");
      } else {
        await stack.kill("gateway", 0, "SIGKILL");
      }
      await eventually(() => followers.every((f) => f.connections.length === 2), { timeoutMs: 30_000, what: "every client to reconnect" });
      // Writes go on after the resume, so that live events follow the replayed ones on every stream.
      const resumedAt = w.written;
      await eventually(() => w.written >= resumedAt + 60, { timeoutMs: 30_000, what: "60 more writes after the resume" });
      await w.stop();
      stack.restart("gateway", 0);
      await stack.waitReady();

      for (const [i, f] of followers.entries()) {
        const org = (tenants[Math.floor(i / 2)] as LoadTenant).organizationId;
        const expected = await eventually(
          async () => {
            const order = await streamOrder(org);
            return f.received.length >= order.length && order.length > 0 ? order : false;
          },
          { timeoutMs: 60_000, what: `stream ${i} to receive every event of its organization` },
        );
        expect(new Set(f.received).size, `stream ${i}: no event twice`).toBe(f.received.length);
        expect(f.received, `stream ${i}: every event, in order`).toEqual(expected);
      }
      expect(w.written).toBeGreaterThan(60);
      for (const f of followers) await f.stop();
      expect(stack.unexpectedExits).toEqual([]);
    }, 240_000);
  }
});
