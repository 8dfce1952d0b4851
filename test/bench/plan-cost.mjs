// What planning each run costs (node test/bench/plan-cost.mjs): the list's plain page of 25 and a
// point read, each run 2,000 times in a row on one connection of its own, with the default plan
// cache and with `plan_cache_mode = force_custom_plan`, twice each, on 20,000 tasks in a schema of
// its own in DATABASE_URL's database. Printed: wall time and the connection's backend CPU per
// statement (from /proc). Asserts nothing.
import { readFileSync } from "node:fs";
import { migrate, newId, POOL_OPTIONS } from "@tasksvc/db";
import { MIGRATIONS_DIR, TASK_INDEXES, taskSearch } from "@tasksvc/tasks";
import postgres from "postgres";

const url = process.env.DATABASE_URL ?? "postgres://127.0.0.1:5432/test";
const SCHEMA = "bench_plan_cost";
const RUNS = 2000;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const org = newId("org");

await migrate({ url, schema: SCHEMA, dir: MIGRATIONS_DIR, log: quiet, indexes: TASK_INDEXES });
const seed = postgres(url, { max: 1, onnotice() {}, connection: { search_path: SCHEMA } });
await seed`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, created_at, updated_at)
  select ${org}, n, 'usr_t', 'ver_' || n, 1, 'task ' || n, 'TODO', now() - n * interval '1 second', now() - n * interval '1 second'
  from generate_series(1, 20000) n`;
await seed`analyze tasks`;

/** User and system CPU of a backend, in ms. */
function cpuOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function measure(mode, name, statement) {
  const sql = postgres(url, { ...POOL_OPTIONS, max: 1, onnotice() {}, connection: { search_path: SCHEMA, plan_cache_mode: mode } });
  for (let i = 0; i < 50; i++) await statement(sql);
  const [{ pid }] = await sql`select pg_backend_pid() as pid`;
  const cpu0 = cpuOf(pid);
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) await statement(sql);
  const wall = (performance.now() - t0) / RUNS;
  const cpu = (cpuOf(pid) - cpu0) / RUNS;
  console.log(`${name.padEnd(14)} ${mode.padEnd(18)} wall ${wall.toFixed(3)} ms  Postgres CPU ${cpu.toFixed(3)} ms`);
  await sql.end();
}

try {
  for (const mode of ["auto", "force_custom_plan", "auto", "force_custom_plan"]) {
    await measure(mode, "page of 25", (sql) =>
      taskSearch(sql).page(org, { filter: { field: "archived", op: "eq", value: false }, sort: "-updated_at", limit: 25 }),
    );
    await measure(mode, "point read", (sql) => sql`select * from tasks where organization_id = ${org} and number = ${7}`);
  }
} finally {
  await seed.unsafe(`drop schema ${SCHEMA} cascade`);
  await seed.end();
}
