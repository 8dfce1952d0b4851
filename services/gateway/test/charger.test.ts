import type { Identity } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { isAppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { awayFromWindowEdge, eventually } from "@tasksvc/testing";
import { afterAll, beforeEach, describe, expect, inject, it } from "vitest";
import { createCharger } from "../src/pipeline/charger.js";
import { gatewayRepo } from "../src/repo/gateway-repo.js";

// The charger against the real `gateway` schema, with synthetic identities (each test its own
// credential and organization), so that reservations and give-backs can be counted exactly.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "gateway", max: 8 });
const sql = db.sql;
const log = createLogger({ service: "charger-test", level: "silent" });

afterAll(async () => {
  await db.end({ timeout: 1 });
});

function identity(burst: number, quota: number): Identity {
  return {
    kind: "api_key",
    credential_id: newId("key"),
    organization_id: newId("org"),
    organization_created_at: new Date(Date.now() - 86_400_000).toISOString(),
    user_id: newId("usr"),
    role: "owner",
    scopes: [],
    plan: "team",
    entitlements: ["public_api"],
    limits: { burst, burst_window_seconds: 60, quota, max_file_size: 1, storage: 1, webhook_endpoints: 1 },
    expires_at: null,
  };
}

/** The repo, counting reservation round trips; while `gate.hold` is set, each one waits until `gate.release()`. */
function countingRepo() {
  const repo = gatewayRepo(sql);
  const calls = { reserve: 0 };
  const held: Array<() => void> = [];
  const gate = {
    hold: false,
    release() {
      gate.hold = false;
      for (const go of held.splice(0)) go();
    },
  };
  return {
    calls,
    gate,
    repo: {
      ...repo,
      reserve: async (a: Parameters<typeof repo.reserve>[0]) => {
        calls.reserve += 1;
        if (gate.hold) await new Promise<void>((resolve) => held.push(resolve));
        return repo.reserve(a);
      },
    },
  };
}

async function counters(id: Identity) {
  // One statement, one snapshot: read apart, a give-back committing in between showed a burst
  // count from before it next to a quota count from after it.
  const [c] = await sql<{ burst: number; quota: number }[]>`
    select (select coalesce(sum(count), 0)::int from burst_counters where credential_id = ${id.credential_id}) as burst,
           (select coalesce(sum(count), 0)::int from usage_counters where organization_id = ${id.organization_id}) as quota`;
  return { burst: c?.burst ?? -1, quota: c?.quota ?? -1 };
}

async function outcomes(charges: Promise<unknown>[]) {
  const settled = await Promise.allSettled(charges);
  const count = { ok: 0, rate_limited: 0, quota_exhausted: 0, other: 0 };
  for (const s of settled) {
    if (s.status === "fulfilled") count.ok += 1;
    else if (isAppError(s.reason) && (s.reason.code === "rate_limited" || s.reason.code === "quota_exhausted")) count[s.reason.code] += 1;
    else count.other += 1;
  }
  return count;
}

describe("charge reservations", () => {
  // Every test counts calls inside one 60 s burst window.
  beforeEach(() => awayFromWindowEdge());

  it("when 60 calls of one credential arrive together far from its limits, then they share a few round trips and, once closed, the counters hold exactly 60", async () => {
    const { repo, calls } = countingRepo();
    const charger = createCharger({ repo, log, holdMs: 10_000 });
    const id = identity(100_000, 1_000_000);
    const r = await outcomes(Array.from({ length: 60 }, () => charger.charge(id)));
    expect(r).toEqual({ ok: 60, rate_limited: 0, quota_exhausted: 0, other: 0 });
    expect(calls.reserve).toBeLessThan(20);
    expect((await counters(id)).burst).toBeGreaterThanOrEqual(60);
    await charger.close();
    expect(await counters(id)).toEqual({ burst: 60, quota: 60 });
  });

  it("when calls come one at a time, slower than one per busyMs, then each is counted as it arrives (nothing is held back)", async () => {
    const { repo, calls } = countingRepo();
    const charger = createCharger({ repo, log, busyMs: 20 });
    const id = identity(100_000, 1_000_000);
    for (let i = 1; i <= 5; i++) {
      const c = await charger.charge(id);
      expect(c.quota.used).toBe(i);
      expect(await counters(id)).toEqual({ burst: i, quota: i });
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(calls.reserve).toBe(5);
    await charger.close();
  });

  it("when calls come one after another faster than one per busyMs, then reservations grow, round trips thin out and, once closed, the counters are exact", async () => {
    const { repo, calls } = countingRepo();
    // A day-long busyMs: every reservation is spent "soon", so each one doubles the next.
    const charger = createCharger({ repo, log, holdMs: 10_000, busyMs: 86_400_000 });
    const id = identity(100_000, 1_000_000);
    for (let i = 1; i <= 63; i++) await charger.charge(id);
    // 1 + 2 + 4 + 8 + 16 + 32 = 63, each reserved while a quarter of the one before was left, and a
    // seventh (64, the cap) once a quarter of the 32 was left: seven, where one a call made 63.
    expect(calls.reserve).toBe(7);
    await charger.close();
    expect(await counters(id)).toEqual({ burst: 63, quota: 63 });
  });

  it("when a busy credential has spent three quarters of a reservation, then the next is reserved meanwhile and its calls go on without waiting for it", async () => {
    const { repo, calls, gate } = countingRepo();
    const charger = createCharger({ repo, log, holdMs: 10_000, busyMs: 86_400_000 });
    const id = identity(100_000, 1_000_000);
    // Reservations of 1, 2, 4 and 8 (the last asked for while one call of the 4 was left).
    for (let i = 0; i < 7; i++) await charger.charge(id);
    expect(calls.reserve).toBe(4);
    // The 8 arrives; its calls are spent until a quarter is left, when the next is asked for and held.
    await charger.charge(id);
    gate.hold = true;
    let spent = 0;
    while (calls.reserve === 4) {
      await charger.charge(id);
      spent += 1;
      expect(spent).toBeLessThanOrEqual(8);
    }
    // With the top-up held, the calls left are spent at once: none waits for a round trip.
    let answered = 0;
    const left = [charger.charge(id), charger.charge(id)].map((p) => p.then(() => (answered += 1)));
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(2);
    await Promise.all(left);
    gate.release();
    await charger.close();
    expect(await counters(id)).toEqual({ burst: 7 + 1 + spent + 2, quota: 7 + 1 + spent + 2 });
  });

  it("when the burst window turns while a top-up is on its way, then the calls left of the old window go back to it and each window counts exactly the calls spent in it", async () => {
    const { repo, calls, gate } = countingRepo();
    const charger = createCharger({ repo, log, holdMs: 10_000, busyMs: 86_400_000 });
    const base = identity(100_000, 1_000_000);
    const id: Identity = { ...base, limits: { ...base.limits, burst_window_seconds: 1 } };
    const spentIn = new Map<string, number>();
    const charge = async () => {
      const c = await charger.charge(id);
      spentIn.set(c.counted.windowKey, (spentIn.get(c.counted.windowKey) ?? 0) + 1);
    };
    await awayFromWindowEdge(1, 300);
    // Busy enough for a reservation of 8, then spent until a quarter is left and the next one is held.
    for (let i = 0; i < 8; i++) await charge();
    gate.hold = true;
    const before = calls.reserve;
    while (calls.reserve === before) await charge();
    // The window turns with calls of the old one left; the next call waits for the held top-up.
    await awayFromWindowEdge(1, 1000);
    const late = charge();
    gate.release();
    await late;
    await charger.close();
    const rows = await sql<{ window_key: string; count: number }[]>`
      select window_start::text as window_key, count from burst_counters where credential_id = ${id.credential_id}`;
    const counted = new Map(rows.filter((w) => w.count > 0).map((w) => [w.window_key, w.count]));
    expect(counted.size).toBeGreaterThanOrEqual(2);
    expect(counted).toEqual(spentIn);
    const charged = [...spentIn.values()].reduce((a, b) => a + b, 0);
    expect((await counters(id)).quota).toBe(charged);
  });

  it("when a busy credential pauses longer than holdMs, then its next call reserves exactly one again", async () => {
    const { repo, calls } = countingRepo();
    const charger = createCharger({ repo, log, holdMs: 100, busyMs: 86_400_000 });
    const id = identity(100_000, 1_000_000);
    // Reservations of 1, 2, 4 and 8: seven of the last are left unspent.
    for (let i = 0; i < 8; i++) await charger.charge(id);
    expect(calls.reserve).toBe(4);
    // The sweeper gives them back once the hold ends.
    await eventually(async () => expect((await counters(id)).quota).toBe(8), { what: "the unspent calls given back" });
    await new Promise((r) => setTimeout(r, 150));
    const before = calls.reserve;
    await charger.charge(id);
    expect(calls.reserve).toBe(before + 1);
    expect(await counters(id)).toEqual({ burst: 9, quota: 9 });
    await charger.close();
  });

  it("when 50 calls race for a burst of 40 on one replica, then exactly 10 are refused and 40 are counted", async () => {
    const { repo } = countingRepo();
    const charger = createCharger({ repo, log, holdMs: 10_000 });
    const id = identity(40, 1_000_000);
    expect(await outcomes(Array.from({ length: 50 }, () => charger.charge(id)))).toEqual({ ok: 40, rate_limited: 10, quota_exhausted: 0, other: 0 });
    expect(await counters(id)).toEqual({ burst: 40, quota: 40 });
    await charger.close();
    expect(await counters(id)).toEqual({ burst: 40, quota: 40 });
  });

  it("when 30 calls race for an allowance of 12, then exactly 18 get quota_exhausted and the refused ones hold no burst slot", async () => {
    const { repo } = countingRepo();
    const charger = createCharger({ repo, log, holdMs: 10_000 });
    const id = identity(100_000, 12);
    expect(await outcomes(Array.from({ length: 30 }, () => charger.charge(id)))).toEqual({ ok: 12, rate_limited: 0, quota_exhausted: 18, other: 0 });
    await charger.close();
    expect(await counters(id)).toEqual({ burst: 12, quota: 12 });
  });

  it("when two replicas share a burst of 100 under 150 racing calls, then no more than 100 pass and the counters equal what passed", async () => {
    const a = createCharger({ repo: gatewayRepo(sql), log, holdMs: 10_000 });
    const b = createCharger({ repo: gatewayRepo(sql), log, holdMs: 10_000 });
    const id = identity(100, 1_000_000);
    const r = await outcomes(Array.from({ length: 150 }, (_, i) => (i % 2 ? a : b).charge(id)));
    expect(r.other).toBe(0);
    expect(r.ok).toBeLessThanOrEqual(100);
    // Unspent reservations can refuse a little early, never let more through: bounded by the
    // last batches (at most an eighth of what remained when each was granted).
    expect(r.ok).toBeGreaterThanOrEqual(90);
    await Promise.all([a.close(), b.close()]);
    expect(await counters(id)).toEqual({ burst: r.ok, quota: r.ok });
  });

  it("when a replica holds unspent calls past holdMs, then it gives them back by itself", async () => {
    const charger = createCharger({ repo: gatewayRepo(sql), log, holdMs: 100 });
    const id = identity(100_000, 1_000_000);
    await outcomes(Array.from({ length: 40 }, () => charger.charge(id)));
    const c = await eventually(
      async () => {
        const seen = await counters(id);
        expect(seen.quota).toBe(40);
        return seen;
      },
      { what: "the unspent calls given back" },
    );
    expect(c).toEqual({ burst: 40, quota: 40 });
    await charger.close();
  });

  it("when charged exactly (GET /v1/usage), then unspent calls are given back first and the count is current", async () => {
    const charger = createCharger({ repo: gatewayRepo(sql), log, holdMs: 10_000 });
    const id = identity(100_000, 1_000_000);
    await outcomes(Array.from({ length: 30 }, () => charger.charge(id)));
    const c = await charger.charge(id, true);
    expect(c.quota.used).toBe(31);
    expect(c.burst.remaining).toBe(100_000 - 31);
    await charger.close();
  });
});
