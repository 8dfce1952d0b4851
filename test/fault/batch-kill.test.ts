import { randomUUID } from "node:crypto";
import { api, eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareLoadTenants } from "./load.js";
import { startProcessStack, type ProcessStack, type ServiceName } from "./processes.js";

/**
 * A 100-item task batch (50 creates, then 50 updates under If-Match) whose process is killed with
 * SIGKILL while it runs: the tasks service, or the gateway. The test plays the client and the
 * orchestrator: it restarts the process and retries the batch with its Idempotency-Key until it
 * is answered. Then every item must be applied exactly once: one task per create (numbers
 * gap-free, none beyond), one new version per update, one event each, and the answer must be the
 * one a single uninterrupted run would have given.
 */
let stack: ProcessStack;
let sql: postgres.Sql;

beforeAll(async () => {
  stack = await startProcessStack({ replicas: { gateway: 1, tasks: 1, keys: 1, boards: 1 }, env: { RPC_TIMEOUT_MS: "3000" } });
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
});

interface Result {
  status: number;
  body: Record<string, unknown>;
}

describe("kill -9 in the middle of a task batch", () => {
  for (const service of ["tasks", "gateway"] as ServiceName[]) {
    it(`when ${service} is killed while a 100-item batch runs and the batch is retried with its Idempotency-Key, then every item is applied exactly once`, async () => {
      const gw = api(stack.gatewayUrls[0] as string);
      const [tenant] = await prepareLoadTenants(stack, 1);
      if (!tenant) throw new Error("no tenant");
      const auth = { token: tenant.apiKey };
      for (let n = 1; n <= 50; n++) expect((await gw.post("/v1/tasks", { title: `Before ${n}` }, auth)).status).toBe(201);
      const operations = [
        ...Array.from({ length: 50 }, (_x, i) => ({ method: "create", body: { title: `Batch ${i}` } })),
        ...Array.from({ length: 50 }, (_x, i) => ({ method: "update", task_id: `T-${i + 1}`, body: { priority: "HIGH" }, if_match: '"1"' })),
      ];
      const headers = { "idempotency-key": randomUUID() };
      const send = () => gw.post("/v1/tasks/batch", { operations }, { ...auth, headers });

      // Killed once the batch has made some of its tasks and not all of them.
      const first = send().then(
        (r) => r.status,
        () => "connection lost",
      );
      await eventually(async () => (await gw.get("/v1/tasks/T-55", auth)).status === 200, {
        what: "the batch to be under way",
        timeoutMs: 20_000,
        intervalMs: 5,
      });
      await stack.kill(service, 0, "SIGKILL");
      const tasksAtKill = Number((await sql`select count(*)::int as n from tasks.tasks where organization_id = ${tenant.organizationId}`)[0]?.["n"]);
      stack.restart(service, 0);
      const outcome = await first;
      // The kill came before the answer: the first request did not succeed.
      expect(outcome).not.toBe(200);

      let answer: { status: number; results: Result[] } | undefined;
      await eventually(
        async () => {
          const r = await send().catch(() => undefined);
          if (r?.status !== 200) return false;
          answer = { status: r.status, results: r.body.results as Result[] };
          return true;
        },
        { what: "the retried batch to be answered", timeoutMs: 90_000, intervalMs: 250 },
      );
      const results = answer?.results ?? [];
      console.log(`fault: kill -9 ${service} during a 100-item batch — first attempt: ${outcome}, creates applied at the kill: ${tasksAtKill - 50} of 50`);

      expect(results.map((x) => x.status)).toEqual([...Array(50).fill(201), ...Array(50).fill(200)]);
      expect(results.slice(0, 50).map((x) => x.body["id"])).toEqual(Array.from({ length: 50 }, (_x, i) => `T-${i + 51}`));
      expect(results.slice(50).map((x) => x.body["version"])).toEqual(Array(50).fill(2));
      expect((await gw.get("/v1/tasks/T-101", auth)).status).toBe(404);
      const versions = await sql`
        select count(*)::int as n from tasks.task_versions where organization_id = ${tenant.organizationId}`;
      // 100 first versions and one new version per update.
      expect(versions[0]?.["n"]).toBe(150);
      await eventually(
        async () => {
          const rows = await sql`
            select type, count(*)::int as n from tasks.events where organization_id = ${tenant.organizationId} group by type order by type`;
          expect(rows.map((r) => [r["type"], r["n"]])).toEqual([
            ["task.created", 100],
            ["task.updated", 50],
          ]);
        },
        { what: "one event per change", timeoutMs: 15_000, intervalMs: 200 },
      );
      expect(stack.unexpectedExits.map((e) => `${e.service}#${e.index} exit ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
    });
  }
});
