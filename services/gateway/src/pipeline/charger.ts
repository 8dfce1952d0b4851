import type { Identity } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import type { GatewayRepo, ReserveRow } from "../repo/gateway-repo.js";
import { batchRefusal, type Charge, type Counters, countersOf, refusal } from "./limits.js";

/** The database caps it further. */
const MAX_BATCH = 64;

/** The counters in the database already include them. */
interface Reservation {
  tokens: number;
  /** Grows while requests queue for a refill or spend it soon after its grant, shrinks when unspent. */
  want: number;
  contended: boolean;
  /** When the last reservation was granted (ms since the epoch), 0 before the first. */
  grantedAt: number;
  expiresAt: number;
  row: ReserveRow | undefined;
  refill: Promise<void> | undefined;
}

export interface ChargerOptions {
  repo: GatewayRepo;
  log: Logger;
  holdMs?: number;
  /**
   * A reservation spent within this long of its grant means the credential's calls come at least
   * that fast one after another: the next reservation is twice as big. Default 50 ms.
   */
  busyMs?: number;
}

/**
 * State lives in Postgres, so the limits hold across replicas; a replica whose requests for one
 * credential queue reserves a batch of calls in one round trip and spends it locally (the
 * database grants at most an eighth of what remains, so near a limit every call counts one by
 * one); a request that comes alone reserves exactly one, and so do calls that come one after
 * another slower than one per `busyMs`; a busy credential's next reservation is asked for while a
 * quarter of the last is left, so its calls do not wait for it (decisions 0005, 0007, 0050, 0052).
 */
export function createCharger(opts: ChargerOptions) {
  const holdMs = opts.holdMs ?? 500;
  const busyMs = opts.busyMs ?? 50;
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

  /** So that the counters are exact. */
  async function settle(id: Identity): Promise<void> {
    const r = reservations.get(keyOf(id));
    if (r) {
      while (r.refill) await r.refill.catch(() => undefined);
      giveBack(r);
    }
    await Promise.all(releases);
  }

  /** The next reservation asks for twice as many calls, up to the cap. */
  const grow = (r: Reservation): void => {
    r.want = Math.min(MAX_BATCH, r.want * 2);
  };

  /**
   * Adds a granted reservation to what is left, which goes back first when it belongs to another
   * burst window or quota period; the row is the newer one, whose counts include every reserved call.
   */
  function take(r: Reservation, row: ReserveRow): void {
    const held = r.row;
    if (!held || held.window_key !== row.window_key || held.period_key !== row.period_key) giveBack(r);
    r.row = row;
    r.tokens += row.granted;
    r.grantedAt = Date.now();
    r.expiresAt = r.grantedAt + holdMs;
  }

  async function refill(r: Reservation, id: Identity): Promise<ReserveRow> {
    if (r.tokens > 0) giveBack(r); // expired or out of its window
    const row = await opts.repo.reserve({ ...countersOf(id), want: r.want });
    if (row.outcome === "ok") take(r, row);
    return row;
  }

  /**
   * A busy credential's next reservation, asked for while a quarter of this one is left, so that its
   * calls do not wait for the round trip when this one runs out. A refusal or failure changes
   * nothing: the call that finds no calls left refills and meets it itself.
   */
  function topUp(r: Reservation, id: Identity, now: number): void {
    // Grown as the blocking refill grows it: when calls still waited for the last top-up, or this
    // reservation went within busyMs.
    if (r.contended || now - r.grantedAt < busyMs) grow(r);
    r.contended = false;
    const pending = (async () => {
      try {
        const row = await opts.repo.reserve({ ...countersOf(id), want: r.want });
        if (row.outcome === "ok") take(r, row);
      } catch (err) {
        opts.log.warn({ err, credential_id: id.credential_id }, "could not reserve calls ahead; the next call reserves them itself");
      }
    })();
    r.refill = pending;
    void pending.finally(() => {
      if (r.refill === pending) r.refill = undefined;
    });
  }

  /** Spent faster than half the hold, with a quarter or less left: the credential's calls come steadily. */
  const runningLow = (r: Reservation, now: number) =>
    r.want > 1 && r.refill === undefined && r.tokens <= r.want >> 2 && now < r.expiresAt && now - r.grantedAt < holdMs >> 1;

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
    /** `exact` gives back this replica's unspent calls first and counts this one alone, so the counters it returns are current (GET /v1/usage). */
    async charge(id: Identity, exact = false): Promise<Charge> {
      const key = keyOf(id);
      let r = reservations.get(key);
      if (!r) {
        r = { tokens: 0, want: 1, contended: false, grantedAt: 0, expiresAt: 0, row: undefined, refill: undefined };
        reservations.set(key, r);
      }
      if (exact) {
        while (r.refill) await r.refill.catch(() => undefined);
        giveBack(r);
        await Promise.all(releases);
      }
      for (;;) {
        const now = Date.now();
        if (!exact && usable(r, now)) {
          const charge = spend(r, id);
          if (runningLow(r, now)) topUp(r, id, now);
          return charge;
        }
        if (r.refill) {
          r.contended = true;
          // A failed refill fails the request that made it; the others try again themselves.
          await r.refill.catch(() => undefined);
          continue;
        }
        // Calls that queued behind a refill, or that spent the last reservation soon after its grant,
        // come faster than one round trip each: the next reservation serves more of them. A quiet
        // spell starts again from one, so that sparse traffic is counted as it arrives, whatever
        // queued before it (calls that waited for a top-up leave their mark until the next one).
        const sinceGrant = Date.now() - r.grantedAt;
        if (sinceGrant >= holdMs) r.want = 1;
        else if (r.contended || (r.tokens === 0 && sinceGrant < busyMs)) grow(r);
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

    /** For an answer that costs nothing (an Idempotency-Key replay) and still says where the limits stand. */
    async current(id: Identity): Promise<Counters> {
      const r = reservations.get(keyOf(id));
      const held = r !== undefined && usable(r, Date.now()) ? r.tokens : 0;
      const l = id.limits;
      const row = await opts.repo.chargeExact({ ...countersOf(id), n: 0 });
      return {
        burst: { limit: l.burst, windowSeconds: l.burst_window_seconds, remaining: Math.max(0, l.burst - row.burst_count + held), resetAt: row.window_end },
        quota: { limit: l.quota, used: Math.max(0, Number(row.quota_count) - held), periodStart: row.period_start, periodEnd: row.period_end },
      };
    },

    /** All or none: a refusal counts none of them, and the pipeline then gives back the first (refund()). */
    async chargeItems(id: Identity, n: number): Promise<void> {
      if (n <= 0) return;
      // Calls this replica reserved and has not spent would make the burst look fuller than it is.
      await settle(id);
      const row = await opts.repo.chargeExact({ ...countersOf(id), n });
      if (row.outcome !== "ok") throw batchRefusal(id, n + 1, row);
    },

    /** A request refused with 429 costs nothing (DESIGN.md section 20). Best effort: on failure the call stays counted. */
    refund(c: Charge): void {
      const k = c.counted;
      track(
        opts.repo
          .release(k.credentialId, k.windowKey, k.orgId, k.periodKey, 1)
          .catch((err: unknown) => opts.log.error({ err, credential_id: k.credentialId }, "could not give back a refused request's call")),
      );
    },

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
