import { afterAll, beforeAll, describe, expect, it } from "vitest";
import postgres from "postgres";
import { endToEndFlow } from "./flow.js";
import { startPrivatePostgres, type PrivatePostgres } from "./private-services.js";
import { startProcessStack, type ProcessStack } from "./processes.js";

/**
 * Every schema can move to a database of its own: here tasks and webhooks live in two databases
 * of one Postgres server and keys, boards and the gateway in three of another, each service told
 * by its own <SERVICE>_DATABASE_URL. A query that joined another service's schema would fail
 * (that schema is in another database, or another server), so the whole user flow passing is
 * the proof that none does.
 */
let a: PrivatePostgres;
let b: PrivatePostgres;
let stack: ProcessStack;
const placement = { tasks: "a", webhooks: "a", keys: "b", boards: "b", gateway: "b" } as const;

const dbUrl = (server: PrivatePostgres, name: string) => {
  const u = new URL(server.url);
  u.pathname = `/${name}`;
  return u.toString();
};

beforeAll(async () => {
  [a, b] = await Promise.all([startPrivatePostgres({ maxConnections: 60 }), startPrivatePostgres({ maxConnections: 60 })]);
  const env: Record<string, string> = { WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" };
  for (const [service, server] of Object.entries(placement)) env[`${service.toUpperCase()}_DATABASE_URL`] = dbUrl(server === "a" ? a : b, `tasksvc_${service}`);
  // The shared DATABASE_URL names a database on server b that no service uses.
  stack = await startProcessStack({ pgBase: b.url, env });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
  await Promise.all([a?.stop(), b?.stop()]);
});

/** The schemas (other than Postgres' own and `extensions`) each database of a server holds. */
async function schemasByDatabase(server: PrivatePostgres): Promise<Record<string, string[]>> {
  const admin = postgres(server.url, { max: 1, onnotice: () => {} });
  const out: Record<string, string[]> = {};
  try {
    const dbs = await admin<{ datname: string }[]>`select datname from pg_database where datname like 'tasksvc_%' order by 1`;
    for (const { datname } of dbs) {
      const sql = postgres(dbUrl(server, datname), { max: 1, onnotice: () => {} });
      try {
        const rows = await sql<{ nspname: string }[]>`
          select nspname from pg_namespace
          where nspname not in ('public', 'extensions', 'information_schema') and nspname not like 'pg\\_%' order by 1`;
        out[datname] = rows.map((r) => r.nspname);
      } finally {
        await sql.end({ timeout: 1 });
      }
    }
  } finally {
    await admin.end({ timeout: 1 });
  }
  return out;
}

describe("a database per service, on two Postgres servers", () => {
  it("when each service has its own DATABASE_URL, then each database holds that service's schema alone", async () => {
    expect(await schemasByDatabase(a)).toEqual({ tasksvc_tasks: ["tasks"], tasksvc_webhooks: ["webhooks"] });
    const onB = await schemasByDatabase(b);
    expect(Object.fromEntries(Object.entries(onB).filter(([name]) => !name.startsWith("tasksvc_fault_")))).toEqual({
      tasksvc_boards: ["boards"],
      tasksvc_gateway: ["gateway"],
      tasksvc_keys: ["keys"],
    });
  });

  it("when a user goes through every service once (keys, tasks, boards, webhooks, idempotency), then every step works with no schema reaching another", async () => {
    await endToEndFlow(stack, stack.gatewayUrls[0] ?? "");
  }, 120_000);
});
