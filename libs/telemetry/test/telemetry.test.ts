import { describe, expect, it } from "vitest";
import { Health, registry, sampled, startOpsServer } from "../src/index.js";

describe("Health", () => {
  it("when starting, serving and stopping, then readiness follows the phase first and the checks second", async () => {
    // No caching: each call runs the checks, so a changed check shows at the next call.
    const h = new Health({ cacheMs: 0 });
    let db: "ok" | "unreachable" = "ok";
    h.check("postgres", () => db);
    expect(await h.readiness()).toEqual({ ready: false, checks: { postgres: "ok", process: "starting" } });
    h.serving();
    expect(await h.readiness()).toEqual({ ready: true, checks: { postgres: "ok" } });
    db = "unreachable";
    expect(await h.readiness()).toEqual({ ready: false, checks: { postgres: "unreachable" } });
    db = "ok";
    h.stopping();
    h.serving();
    expect(await h.readiness()).toEqual({ ready: false, checks: { postgres: "ok", process: "stopping" } });
  });

  it("when a check hangs or throws, then it reads unreachable within about a second instead of holding the probe", async () => {
    const h = new Health();
    h.check("hangs", () => new Promise(() => undefined));
    const remove = h.check("throws", () => {
      throw new Error("boom");
    });
    h.serving();
    const started = Date.now();
    const r = await h.readiness();
    expect(r).toEqual({ ready: false, checks: { hangs: "unreachable", throws: "unreachable" } });
    expect(Date.now() - started).toBeLessThan(5000);
    remove();
    expect(Object.keys((await h.readiness()).checks)).toEqual(["hangs"]);
  });

  it("when many calls arrive within a second, at once or one after another, then the checks run once for all of them", async () => {
    const h = new Health();
    let rounds = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    h.check("postgres", async () => {
      rounds++;
      await gate;
      return "ok" as const;
    });
    h.serving();
    // Concurrent calls wait for the one round in flight.
    const together = Array.from({ length: 20 }, () => h.readiness());
    release();
    for (const r of await Promise.all(together)) expect(r).toEqual({ ready: true, checks: { postgres: "ok" } });
    // Calls right after it are answered by it.
    for (let i = 0; i < 20; i++) expect(await h.readiness()).toEqual({ ready: true, checks: { postgres: "ok" } });
    expect(rounds).toBe(1);
  });

  it("when the cached round is older than the window, then the next call runs the checks again", async () => {
    let clock = 1000;
    const h = new Health({ cacheMs: 20, now: () => clock });
    let rounds = 0;
    h.check("postgres", () => {
      rounds++;
      return "ok";
    });
    h.serving();
    await h.readiness();
    expect(rounds).toBe(1);
    clock += 19;
    await h.readiness();
    expect(rounds).toBe(1);
    clock += 1;
    await h.readiness();
    expect(rounds).toBe(2);
  });

  it("when stopping begins while a round is cached, then readiness reads not ready at once", async () => {
    const h = new Health({ cacheMs: 60_000 });
    let rounds = 0;
    h.check("postgres", () => {
      rounds++;
      return "ok";
    });
    h.serving();
    expect(await h.readiness()).toEqual({ ready: true, checks: { postgres: "ok" } });
    h.stopping();
    expect(await h.readiness()).toEqual({ ready: false, checks: { postgres: "ok", process: "stopping" } });
    expect(rounds).toBe(1);
  });
});

describe("scrape-time gauges", () => {
  it("when a source fails or hangs, then the scrape still answers, without that source's series, and a removed source is gone", async () => {
    const removeGood = sampled.outboxBacklog(() => [{ labels: { outbox: "test_good" }, value: 7 }]);
    const removeBad = sampled.outboxBacklog(() => {
      throw new Error("database down");
    });
    const removeSlow = sampled.outboxBacklog(() => new Promise(() => undefined));
    try {
      const text = await registry.getSingleMetricAsString("tasksvc_outbox_backlog_rows");
      expect(text).toContain('tasksvc_outbox_backlog_rows{outbox="test_good"} 7');
    } finally {
      removeGood();
      removeBad();
      removeSlow();
    }
    expect(await registry.getSingleMetricAsString("tasksvc_outbox_backlog_rows")).not.toContain("test_good");
  });
});

describe("ops server", () => {
  it("when probed, then /healthz, /readyz and /metrics answer, other paths 404 and other methods 405", async () => {
    const h = new Health();
    const ops = await startOpsServer({ port: 0, host: "127.0.0.1", health: h });
    const url = `http://127.0.0.1:${ops.port}`;
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const notYet = await fetch(`${url}/readyz`);
      expect(notYet.status).toBe(503);
      expect(await notYet.json()).toEqual({ status: "not_ready", checks: { process: "starting" } });
      h.serving();
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      // Probes at once share one round of checks with the one before them.
      let rounds = 0;
      h.check("counted", () => {
        rounds++;
        return "ok";
      });
      const answers = await Promise.all(Array.from({ length: 10 }, () => fetch(`${url}/readyz`)));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      expect(rounds).toBe(1);
      h.stopping();
      expect((await fetch(`${url}/readyz`)).status).toBe(503);
      expect(rounds).toBe(1);
      const metrics = await fetch(`${url}/metrics`);
      expect(metrics.headers.get("content-type")).toContain("text/plain");
      expect(await metrics.text()).toContain("# TYPE tasksvc_rpc_server_duration_seconds histogram");
      expect((await fetch(`${url}/nope`)).status).toBe(404);
      expect((await fetch(`${url}/metrics`, { method: "POST" })).status).toBe(405);
    } finally {
      await ops.close();
    }
  });
});
