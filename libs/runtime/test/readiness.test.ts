import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { parseConfig, serviceSettings } from "@tasksvc/config";
import type { Database } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { eventually } from "@tasksvc/testing";
import { z } from "zod";
import { describe, expect, inject, it } from "vitest";
import { defineService, startService } from "../src/index.js";

// A transaction slot that never comes back (a statement or a connect that hangs, a function that
// never returns) holds every later transaction of the replica in the queue; `select 1` on the
// autocommit pool still answers. Readiness must say so, and recover once the slot is back.
const stack = inject("stack");
const Config = z.object({ ...serviceSettings });

/** The value of one sample of `family` with exactly `labels` in a Prometheus text page. */
function sample(text: string, family: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${family}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("readiness and stuck transaction slots", () => {
  it("when a transaction holds its slot past DATABASE_TRANSACTION_STUCK_AFTER and another waits behind it, then /readyz answers 503 naming postgres stuck, the ages show in tasksvc_db_transaction_oldest_seconds, and once the slot is back it is ready again", async () => {
    const id = randomUUID().slice(0, 8);
    const env = {
      DATABASE_URL: stack.databaseUrl,
      NATS_URL: stack.natsUrl,
      NATS_NAMESPACE: `${stack.namespace}_rd_${id}`,
      OPS_PORT: "0",
      DATABASE_TRANSACTION_STUCK_AFTER: "1s",
      // Long enough that the transaction waiting for the slot is still waiting when the test looks.
      DATABASE_STATEMENT_TIMEOUT: "30s",
    };
    let db: Database | undefined;
    const def = defineService({
      name: "runtimetest",
      schema: `runtime_ready_${id}`,
      migrations: fileURLToPath(new URL("./migrations", import.meta.url)),
      config: Config,
      // One transaction slot: a second transaction waits for the first.
      db: { max: 2, txMax: 1 },
      async start(ctx) {
        db = ctx.db;
      },
    });
    const running = await startService(def, parseConfig(Config, env), createLogger({ service: "runtimetest", level: "silent" }));
    const ops = `http://127.0.0.1:${running.opsPort}`;
    const readyz = async () => {
      const r = await fetch(`${ops}/readyz`, { signal: AbortSignal.timeout(5000) });
      return { status: r.status, body: (await r.json()) as { checks: Record<string, string> } };
    };
    let release: () => void = () => undefined;
    try {
      if (!db) throw new Error("start did not run");
      const tx = db.tx;
      await eventually(async () => expect((await readyz()).status).toBe(200), { what: "the replica ready" });

      const held = new Promise<void>((r) => {
        release = r;
      });
      const holding = tx(async (t) => {
        await t`select 1`;
        await held;
      });
      const waiting = tx(async (t) => t`select 2`);
      await eventually(
        async () => {
          const a = await readyz();
          expect(a.status, JSON.stringify(a.body)).toBe(503);
          expect(a.body.checks, JSON.stringify(a.body)).toMatchObject({ postgres: "stuck", nats: "ok" });
        },
        { timeoutMs: 15_000, what: "/readyz to name postgres stuck" },
      );
      const metrics = await (await fetch(`${ops}/metrics`)).text();
      expect(sample(metrics, "tasksvc_db_transaction_oldest_seconds", 'state="in_use"')).toBeGreaterThanOrEqual(1);
      expect(sample(metrics, "tasksvc_db_transaction_oldest_seconds", 'state="waiting"')).toBeGreaterThan(0);

      release();
      await holding;
      await waiting;
      await eventually(
        async () => {
          const a = await readyz();
          expect(a.status, JSON.stringify(a.body)).toBe(200);
        },
        { timeoutMs: 15_000, what: "/readyz ready again" },
      );
      const after = await (await fetch(`${ops}/metrics`)).text();
      expect(sample(after, "tasksvc_db_transaction_oldest_seconds", 'state="in_use"')).toBe(0);
    } finally {
      release();
      await running.stop();
    }
  });
});
