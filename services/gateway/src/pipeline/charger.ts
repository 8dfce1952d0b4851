import type { Identity } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import type { GatewayRepo, ReserveRow } from "../repo/gateway-repo.js";
import { batchRefusal, type Charge, type Counters, countersOf, refusal } from "./limits.js";

/** Largest batch a replica reserves in one round trip (the database caps it further). */
const MAX_BATCH = 64;

/**
 * Calls reserved in Postgres and not yet spent by this replica, for one credential under one set
 * of limits. The counters in the database already include them.
 */
interface Reservation {
  tokens: number;
  /** Batch size to ask for next: grows while requests queue for a refill, shrinks when unspent. */
  want: number;
  /** Requests waited for the refill in flight (the credential is busy on this replica). */
  contended: boolean;
  expiresAt: number;
  row: ReserveRow | undefined;
  refill: Promise<void> | undefined;
}

export interface ChargerOptions {
  repo: GatewayRepo;
  log: Logger;
  /** How long unspent reserved calls stay with this replica before they are given back. */
  holdMs?: number;
}

/**
 * Counts one API call for the credential (burst) and its organization (billing period), or
 * refuses it with 429. State lives in Postgres, so the limits hold across any number of
 * replicas (decisions 0005 and 0007).
 *
 * A replica does not write both counter rows on every request: when requests for one credential
 * queue behind each other it reserves a batch of calls in one round trip (the database grants at
 * most an eighth of what remains, so near a limit every call is counted one by one) and spends
 * it locally. Unspent calls go back after `holdMs` and on shutdown. A request that comes alone
 * reserves exactly one call, so quiet traffic is counted exactly as it arrives.
 */
export function createCharger(opts: ChargerOptions) {
  const holdMs = opts.holdMs ?? 500;
  const reservations = new Map<string, Reservation>();
  const releases = new Set<Promise<void>>();

  const keyOf = (id: Identity) => `${id.credential_id}\u0000${id.organization_id}\u0000${id.limits.burst}/${id.limits.burst_window_seconds}/${id.limits.quota}`;

  function giveBack(r: Reservation): void {
    const row = r.row;
    const n = r.tokens;
    r.tokens = 0;
    if (!row || n <= 0) return;
    track(
      opts.repo
        .release(row.credentialId, row.window_key, row.organizationId, row.period_key, n)
        .catch((err: unknown) => opts.log.error({ err, credential_id: row.credentialId, calls: n }, "could not give back reserved calls")),
    );
  }

  const usable = (r: Reservation, now: number) =>
    r.tokens > 0 && r.row !== undefined && now < r.expiresAt && now < r.row.window_end.getTime() && now < r.row.period_end.getTime();

  function spend(r: Reservation, id: Identity): Charge {
    r.tokens -= 1;
    const row = r.row;
    // Callers spend only a usable reservation or one just refilled, so it always has its row.
    if (!row) throw new Error("spend(): the reservation has no reserved row");
    const l = id.limits;
    return {
      burst: { limit: l.burst, windowSeconds: l.burst_window_seconds, remaining: Math.max(0, l.burst - row.burst_count + r.tokens), resetAt: row.window_end },
      quota: { limit: l.quota, used: Number(row.quota_count) - r.tokens, periodStart: row.period_start, periodEnd: row.period_end },
      counted: { credentialId: row.credentialId, windowKey: row.window_key, orgId: row.organizationId, periodKey: row.period_key },
    };
  }

  function track(p: Promise<void>): void {
    const tracked = p.finally(() => releases.delete(tracked));
    releases.add(tracked);
  }

  /** Gives this replica's unspent calls for the credential back, so that the counters are exact. */
  async function settle(id: Identity): Promise<void> {
    const r = reservations.get(keyOf(id));
    if (r) {
      while (r.refill) await r.refill.catch(() => undefined);
      giveBack(r);
    }
    await Promise.all(releases);
  }

  async function refill(r: Reservation, id: Identity): Promise<ReserveRow> {
    if (r.tokens > 0) giveBack(r); // expired or out of its window
    const row = await opts.repo.reserve({ ...countersOf(id), want: r.want });
    if (row.outcome === "ok") {
      r.row = row;
      r.tokens = row.granted;
      r.expiresAt = Date.now() + holdMs;
    }
    return row;
  }

  // Unspent reservations go back once they expire, so other replicas (and GET /v1/usage) see them.
  const sweeper = setInterval(
    () => {
      const now = Date.now();
      for (const [key, r] of reservations) {
        if (r.refill) continue;
        if (r.tokens > 0 && now >= r.expiresAt) {
          giveBack(r);
          r.want = Math.max(1, r.want >> 1);
        } else if (r.tokens === 0 && now >= r.expiresAt + 10 * holdMs) {
          reservations.delete(key);
        }
      }
    },
    Math.max(50, holdMs >> 1),
  );
  sweeper.unref();

  return {
    /**
     * Charges one call. `exact` first gives back this replica's unspent calls for the
     * credential and counts this call alone, so the counters it returns are current (GET
     * /v1/usage).
     */
    async charge(id: Identity, exact = false): Promise<Charge> {
      const key = keyOf(id);
      let r = reservations.get(key);
      if (!r) {
        r = { tokens: 0, want: 1, contended: false, expiresAt: 0, row: undefined, refill: undefined };
        reservations.set(key, r);
      }
      if (exact) {
        while (r.refill) await r.refill.catch(() => undefined);
        giveBack(r);
        await Promise.all(releases);
      }
      for (;;) {
        if (!exact && usable(r, Date.now())) return spend(r, id);
        if (r.refill) {
          r.contended = true;
          // A failed refill fails the request that made it; the others try again themselves.
          await r.refill.catch(() => undefined);
          continue;
        }
        if (r.contended) r.want = Math.min(MAX_BATCH, r.want * 2);
        r.contended = false;
        if (exact) r.want = 1;
        let row!: ReserveRow;
        const pending = refill(r, id).then((x) => {
          row = x;
        });
        r.refill = pending;
        try {
          await pending;
        } finally {
          r.refill = undefined;
        }
        if (row.outcome !== "ok") throw refusal(id, row);
        return spend(r, id);
      }
    },

    /**
     * The counters as they stand, counting nothing: for an answer that costs nothing (an
     * Idempotency-Key replay) and still says where the limits stand, as the operation's other
     * answers do. Calls this replica has reserved and not spent are the caller's still.
     */
    async current(id: Identity): Promise<Counters> {
      const r = reservations.get(keyOf(id));
      const held = r !== undefined && usable(r, Date.now()) ? r.tokens : 0;
      const l = id.limits;
      // Counting none more: the database's counters, unchanged, for the current window and period.
      const row = await opts.repo.chargeExact({ ...countersOf(id), n: 0 });
      return {
        burst: { limit: l.burst, windowSeconds: l.burst_window_seconds, remaining: Math.max(0, l.burst - row.burst_count + held), resetAt: row.window_end },
        quota: { limit: l.quota, used: Math.max(0, Number(row.quota_count) - held), periodStart: row.period_start, periodEnd: row.period_end },
      };
    },

    /**
     * Counts `n` more calls against the burst window and the billing period, all or none (a
     * batch: one call per item against each, DESIGN.md section 9; the pipeline counted the
     * first). A refusal counts none of them: 429 rate_limited when the burst window cannot take
     * them, else 429 quota_exhausted; the pipeline then gives back the first (refund()).
     */
    async chargeItems(id: Identity, n: number): Promise<void> {
      if (n <= 0) return;
      // Calls this replica reserved and has not spent would make the burst look fuller than it is.
      await settle(id);
      const row = await opts.repo.chargeExact({ ...countersOf(id), n });
      if (row.outcome !== "ok") throw batchRefusal(id, n + 1, row);
    },

    /**
     * Gives back a call that was counted for a request then refused with 429 (a request refused
     * with 429 costs nothing, DESIGN.md section 20). Best effort: a failure is logged, and the
     * call stays counted.
     */
    refund(c: Charge): void {
      const k = c.counted;
      track(
        opts.repo
          .release(k.credentialId, k.windowKey, k.orgId, k.periodKey, 1)
          .catch((err: unknown) => opts.log.error({ err, credential_id: k.credentialId }, "could not give back a refused request's call")),
      );
    },

    /** Gives every unspent reservation back (graceful shutdown). */
    async close(): Promise<void> {
      clearInterval(sweeper);
      for (const r of reservations.values()) {
        if (r.refill) await r.refill.catch(() => undefined);
        giveBack(r);
      }
      await Promise.all(releases);
    },
  };
}
export type Charger = ReturnType<typeof createCharger>;
