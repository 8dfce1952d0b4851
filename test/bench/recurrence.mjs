// Issue 16: how many recurring tasks the scheduler advances per second. The tasks service's own
// scheduler code (services/tasks/dist) against the bench's database, on a schema of its own so
// that the running tasks replicas' scheduler never sees these series: N daily series are created
// through the domain (numbered, versioned, with events), then one tick at the next day makes an
// occurrence of each. A second tick at the same instant reads every series again (each latest
// occurrence just changed), finds nothing due and puts them to sleep until the next day (the cost
// of a full scan); a third reads none (the cost of a tick with every series asleep, migration 0008).
import { createDb, migrate } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { MIGRATIONS_DIR, recurrenceSystem, tasksResources, tasksSystem } from "@tasksvc/tasks";

const SCHEMA = "bench_recurrence";

/** Runs the scenario with the series in one organization, then spread over 200 (10 each): batches are per organization. */
export async function recurrenceScenarios({ databaseUrl, series = 2000, log }) {
  return [await recurrenceScenario({ databaseUrl, series, orgs: 1, log }), await recurrenceScenario({ databaseUrl, series, orgs: 200, log })];
}

async function recurrenceScenario({ databaseUrl, series, orgs, log }) {
  const silent = createLogger({ service: "bench-recurrence", level: "silent" });
  await migrate({ url: databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log: silent });
  const db = createDb({ url: databaseUrl, schema: SCHEMA, max: 10 });
  try {
    const resources = tasksResources(db, { log: silent });
    const svc = tasksSystem(resources);
    const callerOf = (org) => ({
      organizationId: org,
      userId: "usr_bench",
      credentialId: "key_bench",
      idempotencyKey: undefined,
      ctx: { request_id: "bench", organization_id: org, user_id: "usr_bench", credential_id: "key_bench", scopes: [], plan: "pro" },
    });
    log(`recurrence: creating ${series} daily series in ${orgs} organization(s) …`);
    for (let i = 0; i < series; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, series - i) }, (_, k) =>
          svc.createTask(callerOf(`org_bench_recurrence_${(i + k) % orgs}`), {
            title: `recurring ${i + k}`,
            recurrence: { frequency: "DAILY", start_date: "2026-11-01" },
          }),
        ),
      );
    }
    const scheduler = recurrenceSystem(resources, { boards: { request: async () => undefined } });
    const now = new Date("2026-11-02T12:00:00Z");
    let started = performance.now();
    const made = await scheduler.tick(now);
    const busySeconds = (performance.now() - started) / 1000;
    started = performance.now();
    const again = await scheduler.tick(now);
    const scanMs = performance.now() - started;
    started = performance.now();
    const asleep = await scheduler.tick(now);
    const idleMs = performance.now() - started;
    return { series, orgs, made, seconds: busySeconds, perSecond: made / busySeconds, scanMs, idleMs, again: again + asleep };
  } finally {
    await db.sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
    await db.end({ timeout: 1 });
  }
}
