import { webhookAttempts, webhookDeliveriesFinished, webhookEndpointsDisabled } from "@tasksvc/telemetry";
import type { CallResult, SignedRequest } from "@tasksvc/contracts";
import { delayAfterFailure } from "@tasksvc/outbound";
import { attemptRow, type AttemptsRepo, type DeliveryUpdate, type EndpointStreak, type Expired, type StreakUpdate } from "../repo/attempts-repo.js";
import type { Signer } from "./signer.js";

export interface AttemptsDeps {
  repo: AttemptsRepo;
  tx<T>(fn: (repo: AttemptsRepo) => Promise<T>): Promise<T>;
  signer: Signer;
  /** WEBHOOK_RETRY_DELAYS: the delay before each attempt; its length is the number of attempts. */
  retryDelays: readonly number[];
  /** WEBHOOK_DISABLE_AFTER and WEBHOOK_DISABLE_MIN_AGE (DESIGN.md 5). */
  disableAfter: number;
  disableMinAgeMs: number;
  /** Called after outcomes were recorded (slots freed, retries scheduled). */
  onRecorded?: () => void;
  now?: () => Date;
}

export interface JobRef {
  delivery_id: string;
  attempt: number;
}

export interface ReportedAttempt extends JobRef {
  attempted_at: string;
  result: CallResult;
}

/** Why an endpoint was disabled automatically (spec 2.8 `disabled_reason`; decision 0015). */
export const DISABLED_GONE = "endpoint_gone";
export const DISABLED_FAILING = "consecutive_failures";

const succeeded = (r: CallResult) => r.outcome === "delivered";

/**
 * The delivery attempts: what the worker may send (start), and what its calls came to (record):
 * the delivery's state, the retry schedule, the endpoint's failure streak and auto-disable.
 */
export function attemptsService(deps: AttemptsDeps) {
  const now = deps.now ?? (() => new Date());

  /** The next state after a failed attempt `attempt` (1-based): a retry, FAILED, or DISABLED. */
  function afterFailure(id: string, attempt: number, status: number | null, retryAfterMs: number | null, endpointEnabled: boolean): DeliveryUpdate {
    if (!endpointEnabled) return { id, state: "DISABLED", attemptCount: attempt, lastStatus: status, nextInMs: null };
    const delay = delayAfterFailure({
      delays: deps.retryDelays,
      attemptsMade: attempt,
      status: status ?? undefined,
      retryAfterMs: retryAfterMs ?? undefined,
    });
    return delay === null
      ? { id, state: "FAILED", attemptCount: attempt, lastStatus: status, nextInMs: null }
      : { id, state: "PENDING", attemptCount: attempt, lastStatus: status, nextInMs: delay };
  }

  /**
   * An endpoint's streak after these results, in the order they happened: a success ends it, a
   * failure extends it; a 410 disables at once, and a streak of `disableAfter` failures that began
   * at least `disableMinAgeMs` ago disables too (DESIGN.md 5).
   */
  function streakAfter(e: EndpointStreak, results: readonly ReportedAttempt[], at: Date): StreakUpdate {
    let failureCount = e.failureCount;
    let failingSince = e.failingSince;
    let gone = false;
    for (const r of results) {
      if (succeeded(r.result)) {
        failureCount = 0;
        failingSince = null;
        continue;
      }
      failureCount += 1;
      failingSince ??= new Date(r.attempted_at);
      if (r.result.status === 410) gone = true;
    }
    let disabledReason: string | null = null;
    if (e.enabled && gone) disabledReason = DISABLED_GONE;
    else if (e.enabled && failingSince !== null && failureCount >= deps.disableAfter && at.getTime() - failingSince.getTime() >= deps.disableMinAgeMs) {
      disabledReason = DISABLED_FAILING;
    }
    return { id: e.id, failureCount, failingSince, disabledReason };
  }

  return {
    /**
     * The signed request of each job still due: its delivery exists (not deleted with its
     * endpoint), is DELIVERING in this very attempt (not expired and dispatched again) and its
     * endpoint is enabled. Others get `request: null` and the worker sends nothing; an attempt
     * whose endpoint was disabled meanwhile becomes DISABLED.
     */
    async start(jobs: readonly JobRef[]): Promise<{ attempts: Array<JobRef & { request: SignedRequest | null }> }> {
      const subjects = new Map((await deps.repo.subjects(jobs.map((j) => j.delivery_id))).map((s) => [s.id, s]));
      const attempts: Array<JobRef & { request: SignedRequest | null }> = [];
      for (const job of jobs) {
        const s = subjects.get(job.delivery_id);
        const current = s !== undefined && s.state === "DELIVERING" && s.attemptCount + 1 === job.attempt;
        if (s === undefined || !current) {
          attempts.push({ ...job, request: null });
          continue;
        }
        if (!s.enabled) {
          await deps.repo.disableAttempt(s.id, job.attempt);
          attempts.push({ ...job, request: null });
          continue;
        }
        // The event's own time, as the fan-out stored it (the same on every attempt and replay).
        const timestamp = typeof s.payload.timestamp === "string" ? new Date(s.payload.timestamp) : now();
        const request = deps.signer.sign(s.url, s, s.eventId, { type: s.eventType, timestamp, data: s.payload.data });
        attempts.push({ ...job, request: s.traceparent ? { ...request, traceparent: s.traceparent } : request });
      }
      return { attempts };
    },

    /**
     * Records reported attempts in one transaction. Every report becomes an attempt row (a late
     * one replaces its `no_outcome` placeholder). A failure moves the delivery's state only when
     * it is the current attempt (one whose lease ran out and was dispatched again does not: the
     * new attempt decides); a 2xx always ends a delivery still PENDING or DELIVERING. Endpoints
     * are locked first, in id order, then deliveries.
     */
    async record(results: readonly ReportedAttempt[]): Promise<{ recorded: number }> {
      const recorded = await deps.tx(async (repo) => {
        const at = now();
        const deliveries = await repo.lockDeliveriesAfterEndpoints(results.map((r) => r.delivery_id));
        const byId = new Map(deliveries.rows.map((d) => [d.id, d]));
        const known = results.filter((r) => byId.has(r.delivery_id));

        // Streaks first: a failure that disables its endpoint makes its own delivery DISABLED.
        const ordered = [...known].sort((a, b) => a.attempted_at.localeCompare(b.attempted_at));
        const streaks = deliveries.endpoints.map((e) =>
          streakAfter(
            e,
            ordered.filter((r) => byId.get(r.delivery_id)?.endpointId === e.id),
            at,
          ),
        );
        const enabled = new Map(deliveries.endpoints.map((e) => [e.id, e.enabled]));
        for (const s of streaks) if (s.disabledReason !== null) enabled.set(s.id, false);

        // One update per delivery (a batch may, rarely, hold two reports of one).
        const updates = new Map<string, DeliveryUpdate>();
        for (const r of ordered) {
          const d = byId.get(r.delivery_id);
          if (d === undefined || updates.get(d.id)?.state === "SUCCEEDED") continue;
          const current = d.state === "DELIVERING" && d.attemptCount + 1 === r.attempt;
          if (succeeded(r.result) && (current || d.state === "PENDING" || d.state === "DELIVERING")) {
            // A 2xx is a success even when it comes late (its lease ran out and the delivery was
            // scheduled or dispatched again): the receiver has the event, so no further call.
            updates.set(d.id, { id: d.id, state: "SUCCEEDED", attemptCount: Math.max(d.attemptCount, r.attempt), lastStatus: r.result.status, nextInMs: null });
          } else if (current) {
            updates.set(d.id, afterFailure(d.id, r.attempt, r.result.status, r.result.retry_after_ms, enabled.get(d.endpointId) ?? false));
          }
        }
        // Sent together (one round trip): none reads what another writes.
        await Promise.all([
          repo.insertAttempts(known.map((r) => attemptRow(r.delivery_id, r.attempt, r.attempted_at, r.result))),
          repo.updateStreaks(streaks),
          repo.updateDeliveries([...updates.values()]),
        ]);
        return {
          count: known.length,
          finished: [...updates.values()].map((u) => u.state),
          disabled: streaks.flatMap((s) => (s.disabledReason === null ? [] : [s.disabledReason])),
        };
      });
      for (const state of recorded.finished) if (state === "SUCCEEDED" || state === "FAILED" || state === "DISABLED") webhookDeliveriesFinished.inc({ state });
      for (const reason of recorded.disabled) webhookEndpointsDisabled.inc({ reason });
      deps.onRecorded?.();
      return { recorded: recorded.count };
    },

    /**
     * Attempts whose lease ran out unreported (a worker killed mid-call, a job the stream lost):
     * each counts as an attempt (`no_outcome`, so a delivery that kills its worker every time ends
     * FAILED instead of looping) and follows the schedule. Not counted against the endpoint: its
     * fault is not known. Runs inside the dispatcher's transaction.
     */
    async expire(repo: AttemptsRepo, expired: readonly Expired[]): Promise<void> {
      if (expired.length === 0) return;
      const at = now().toISOString();
      await repo.insertAttempts(
        expired.map((e) => ({
          deliveryId: e.id,
          attempt: e.attempt,
          attemptedAt: at,
          outcome: "no_outcome",
          status: null,
          errorClass: "lease_expired",
          durationMs: null,
        })),
      );
      await repo.updateDeliveries(expired.map((e) => afterFailure(e.id, e.attempt, null, null, e.endpointEnabled)));
      // Counted as the attempts they are (the delivery worker counts the ones it made).
      webhookAttempts.inc({ outcome: "no_outcome" }, expired.length);
    },
  };
}
export type AttemptsService = ReturnType<typeof attemptsService>;
