import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { eventually } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DuplicateEndpointUrl, endpointsRepo } from "../src/repo/endpoints-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The repository's bounds on endpoints, each against a schema of its own: the cap under
// concurrent creates, with the interleaving forced rather than hoped for; and upgrading a database
// whose organizations already have several endpoints with one URL (migrated in two steps), where
// the migration that brings the one-URL rule must apply, keep one endpoint per URL live, and leave
// the others where a customer can see and fix them.
const stack = inject("stack");
const CAP_SCHEMA = "webhooks_cap_test";
const SCHEMA = "webhooks_upgrade_test";
const RULE = "0007_endpoint_urls.sql";
const log = createLogger({ service: "endpoint-bounds-test", level: "silent" });
const capDb = createDb({ url: stack.databaseUrl, schema: CAP_SCHEMA, max: 6, txMax: 3 });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2 });
const sql = db.sql;
const endpoints = endpointsRepo(sql);
const before = mkdtempSync(join(tmpdir(), "webhooks-migrations-"));

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: CAP_SCHEMA, dir: MIGRATIONS_DIR, log });
  for (const name of readdirSync(MIGRATIONS_DIR).filter((n) => n < RULE)) cpSync(join(MIGRATIONS_DIR, name), join(before, name));
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: before, log });
});

afterAll(async () => {
  rmSync(before, { recursive: true, force: true });
  await capDb.sql.unsafe(`drop schema ${CAP_SCHEMA} cascade`);
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await capDb.end({ timeout: 1 });
  await db.end({ timeout: 1 });
});

interface Row {
  id: string;
  enabled: boolean;
  disabled_reason: string | null;
  duplicate_url: boolean;
}

describe("the cap on endpoints under concurrent creates", () => {
  it("when a second create starts while the first, at the cap - 1, has inserted but not committed, then it waits and is refused at the cap", async () => {
    const org = newId("org");
    const endpoint = (id: string) => ({
      id,
      organizationId: org,
      url: `https://hooks.example.com/${id}`,
      eventTypes: [],
      rateLimit: null,
      secretSealed: "v1.test",
    });
    let inserted!: () => void;
    let commit!: () => void;
    const firstInserted = new Promise<void>((r) => (inserted = r));
    const mayCommit = new Promise<void>((r) => (commit = r));
    const first = capDb.tx(async (t) => {
      const made = await endpointsRepo(t).insert(endpoint("whe_first"), 1);
      inserted();
      await mayCommit;
      return made;
    });
    await firstInserted;
    let settled = false;
    const second = capDb.tx((t) => endpointsRepo(t).insert(endpoint("whe_second"), 1)).finally(() => (settled = true));
    // The second create either finished (counting without the first's row: the race) or waits
    // on the first's lock; only then may the first commit.
    await eventually(
      async () =>
        settled ||
        (await capDb.sql`select 1 from pg_stat_activity where application_name like ${`tasksvc-${CAP_SCHEMA}-%`} and wait_event_type = 'Lock'`).length > 0,
      { intervalMs: 20, what: "the second create to finish or wait" },
    );
    commit();
    expect(await first).toMatchObject({ endpoint: { id: "whe_first" } });
    expect(await second).toEqual({ atCap: 1 });
    expect(await capDb.sql`select id from endpoints where organization_id = ${org}`).toEqual([{ id: "whe_first" }]);
  });
});

describe("the upgrade to one endpoint per URL", () => {
  it("when an organization has several endpoints with one URL, then the oldest enabled one is kept and the others are disabled, marked, and held to the rule once touched", async () => {
    const org = newId("org");
    const other = newId("org");
    const url = "https://hooks.example.com/same";
    const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 0, minutes)).toISOString();
    const insert = (id: string, orgId: string, enabled: boolean, minutes: number, reason: string | null = null) => sql`
      insert into endpoints (id, organization_id, url, enabled, disabled_reason, secret_sealed, created_at)
      values (${id}, ${orgId}, ${url}, ${enabled}, ${reason}, 'v1.test', ${at(minutes)})`;
    // Oldest of all, but disabled by its failures: the oldest ENABLED one is the one kept.
    await insert("whe_failing", org, false, 0, "consecutive_failures");
    await insert("whe_kept", org, true, 1);
    await insert("whe_later", org, true, 2);
    await insert("whe_latest", org, true, 3);
    await insert("whe_theirs", other, true, 4);
    await sql`
      insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state)
      values ('whd_queued', ${org}, 'whe_later', 'evt_1', 'task.created', '{}'::jsonb, 'PENDING'),
             ('whd_done', ${org}, 'whe_later', 'evt_2', 'task.created', '{}'::jsonb, 'SUCCEEDED'),
             ('whd_kept', ${org}, 'whe_kept', 'evt_1', 'task.created', '{}'::jsonb, 'PENDING')`;

    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });

    const rows = await sql<Row[]>`select id, enabled, disabled_reason, duplicate_url from endpoints order by created_at`;
    expect(rows).toEqual([
      { id: "whe_failing", enabled: false, disabled_reason: "consecutive_failures", duplicate_url: true },
      { id: "whe_kept", enabled: true, disabled_reason: null, duplicate_url: false },
      { id: "whe_later", enabled: false, disabled_reason: "duplicate_url", duplicate_url: true },
      { id: "whe_latest", enabled: false, disabled_reason: "duplicate_url", duplicate_url: true },
      { id: "whe_theirs", enabled: true, disabled_reason: null, duplicate_url: false },
    ]);
    const deliveries = await sql<{ id: string; state: string }[]>`select id, state from deliveries order by id`;
    expect(deliveries).toEqual([
      { id: "whd_done", state: "SUCCEEDED" },
      { id: "whd_kept", state: "PENDING" },
      { id: "whd_queued", state: "DISABLED" },
    ]);

    // A marked endpoint's other fields may change; enabling it while its URL is taken is refused.
    expect(await endpoints.update(org, "whe_later", { event_types: ["task.created"] })).toMatchObject({ enabled: false });
    await expect(endpoints.update(org, "whe_later", { enabled: true })).rejects.toBeInstanceOf(DuplicateEndpointUrl);
    // Moved to a URL of its own, it joins the rule and may be enabled.
    expect(await endpoints.update(org, "whe_latest", { url: "https://hooks.example.com/own" })).toMatchObject({ enabled: false });
    expect(await endpoints.update(org, "whe_latest", { enabled: true })).toMatchObject({ enabled: true, disabled_reason: null });
    // Once the kept one is gone, a marked one may take the URL back.
    expect(await endpoints.remove(org, "whe_kept")).toBe(true);
    expect(await endpoints.update(org, "whe_later", { enabled: true })).toMatchObject({ enabled: true, url });
    await expect(endpoints.update(org, "whe_failing", { enabled: true })).rejects.toBeInstanceOf(DuplicateEndpointUrl);
  });
});
