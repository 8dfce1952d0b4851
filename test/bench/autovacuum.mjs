// A stand-in for Postgres' autovacuum during a bench run. The project's machines run Postgres with
// `autovacuum = off`, which no production server does: without it a table that grew from empty
// keeps its planner statistics of an empty table, and the plans cached on long-lived connections
// (the foreign-key checks among them) scan it whole at every row. Measured on a 100,000-task
// import: creates slowed from ~480 to ~110 a second as the organization grew. This loop applies
// autovacuum's default thresholds to the bench database's tables, so the figures are those of a
// server with autovacuum on. Only the run's own database is touched.
import postgres from "postgres";

/** Default autovacuum thresholds: vacuum at 50 + 20% dead rows, analyze at 50 + 10% changed rows. */
const VACUUM = { base: 50, scale: 0.2 };
const ANALYZE = { base: 50, scale: 0.1 };

export function startAutovacuum(databaseUrl, { intervalMs = 5_000, log = () => {} } = {}) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  let running = true;
  let held = 0;
  let passing = Promise.resolve();
  let wake = () => {};
  async function pass() {
    try {
      const due = await sql`
        select quote_ident(schemaname) || '.' || quote_ident(relname) as name,
          n_dead_tup > ${VACUUM.base}::int + ${VACUUM.scale}::float8 * n_live_tup as vacuum,
          n_mod_since_analyze > ${ANALYZE.base}::int + ${ANALYZE.scale}::float8 * n_live_tup as analyze
        from pg_stat_user_tables
        where n_dead_tup > ${VACUUM.base}::int + ${VACUUM.scale}::float8 * n_live_tup
           or n_mod_since_analyze > ${ANALYZE.base}::int + ${ANALYZE.scale}::float8 * n_live_tup`;
      for (const t of due) {
        if (!running) break;
        await sql.unsafe(t.vacuum ? `vacuum (analyze) ${t.name}` : `analyze ${t.name}`);
        log(`autovacuum stand-in: ${t.vacuum ? "vacuum (analyze)" : "analyze"} ${t.name}`);
      }
    } catch (e) {
      // A table dropped meanwhile, or the database going away at the end of the run.
      if (running) log(`autovacuum stand-in: ${e.message}`);
    }
  }
  const loop = (async () => {
    while (running) {
      if (held === 0) {
        passing = pass();
        await passing;
      }
      await new Promise((r) => {
        const timer = setTimeout(r, intervalMs);
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
    }
  })();
  return {
    /**
     * Runs `fn` with no pass inside it, after a pass of its own. With nothing throttling it (a
     * server's autovacuum sleeps between pages and looks once a minute), a pass over a dozen
     * tables takes one of the two cores for up to a second; inside a steady-rate window, whether
     * it landed in a scenario's or in its baseline's was chance.
     */
    async between(fn) {
      held++;
      try {
        await passing;
        await pass();
        return await fn();
      } finally {
        held--;
      }
    },
    async stop() {
      running = false;
      wake();
      await loop;
      await sql.end({ timeout: 1 });
    },
  };
}
