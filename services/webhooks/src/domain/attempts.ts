import type { AttemptRef, ReportedAttempt, StartAttempt, StartedAttempts } from "@tasksvc/contracts";
import { webhookAttempts, webhookDeliveriesFinished, webhookEndpointsDisabled } from "@tasksvc/telemetry";
import { attemptRow, attemptsRepo, type DeliveryUpdate } from "../repo/attempts-repo.js";
import { endpointsRepo } from "../repo/endpoints-repo.js";
import type { WebhooksResources } from "./resources.js";
import { afterFailure, streakAfter, succeeded } from "./delivery-rules.js";

/** A start that found the row taken by a racing start or expiry (its window not yet known) asks again after this. */
const BUSY_RECHECK_MS = 1000;

export function attemptsService(res: WebhooksResources) {
  const repo = attemptsRepo(res.db.sql);

  return {
    /**
     * Starting opens the attempt's call window: until it passes, a second start answers `busy_until`,
     * so a job that reaches two workers makes one call at a time (decision 0033).
     */
    async start(jobs: readonly StartAttempt[]): Promise<StartedAttempts> {
      const key = (j: AttemptRef) => `${j.delivery_id}:${j.attempt}`;
      const unique = [...new Map(jobs.map((j) => [key(j), j])).values()];
      const subjects = new Map((await repo.start(unique)).map((s) => [s.id, s]));
      // A window opened over one that passed unreported is a call that ended with no outcome (its worker died).
      const reopened = [...subjects.values()].filter((s) => s.reopened).length;
      if (reopened > 0) webhookAttempts.inc({ outcome: "no_outcome" }, reopened);
      const given = new Set<string>();
      const attempts: StartedAttempts["attempts"] = [];
      for (const job of jobs) {
        const ref = { delivery_id: job.delivery_id, attempt: job.attempt };
        const s = subjects.get(job.delivery_id);
        const current = s !== undefined && s.state === "DELIVERING" && s.attemptCount + 1 === job.attempt;
        if (s === undefined || !current) {
          attempts.push({ ...ref, request: null });
          continue;
        }
        if (!s.opened || given.has(key(job))) {
          // Another start holds the window (or took the row first): ask again once it has passed.
          const until = Math.max(s.callUntil?.getTime() ?? 0, res.now().getTime() + BUSY_RECHECK_MS);
          attempts.push({ ...ref, request: null, busy_until: new Date(until).toISOString() });
          continue;
        }
        given.add(key(job));
        // A body swept while a replay of its event was being made leaves nothing to send: that
        // delivery stops as one to a disabled endpoint does, without counting as a failed call.
        if (!s.enabled || s.body === null) {
          await repo.disableAttempt(s.id, job.attempt);
          attempts.push({ ...ref, request: null });
          continue;
        }
        // The event's body exactly as stored, signed as it is: the same bytes on every attempt and replay.
        const request = res.signer.sign(s.url, s, s.eventId, s.body);
        attempts.push({
          ...ref,
          request: s.traceparent ? { ...request, traceparent: s.traceparent } : request,
          occurred_at: s.occurredAt.toISOString(),
        });
      }
      return { attempts };
    },

    /** Not an attempt (no row, the count unchanged) and not a failure: PENDING again, so the next pass gives a new send time. */
    async defer(jobs: readonly AttemptRef[]): Promise<{ deferred: number }> {
      const deferred = await repo.unclaim(jobs, 0);
      res.wake();
      return { deferred };
    },

    /**
     * A failure moves the delivery's state only for its current attempt; a 2xx always ends a delivery
     * still PENDING or DELIVERING (decision 0015). Endpoints are locked first, in id order.
     */
    async record(results: readonly ReportedAttempt[]): Promise<{ recorded: number }> {
      const recorded = await res.db.tx(async (t) => {
        const repo = attemptsRepo(t);
        const at = res.now();
        const deliveries = await repo.lockDeliveriesAfterEndpoints(results.map((r) => r.delivery_id));
        const byId = new Map(deliveries.rows.map((d) => [d.id, d]));
        const known = results.filter((r) => byId.has(r.delivery_id));

        // Streaks first: a failure that disables its endpoint makes its own delivery DISABLED.
        const ordered = [...known].sort((a, b) => a.attempted_at.localeCompare(b.attempted_at));
        const streaks = deliveries.endpoints.map((e) =>
          streakAfter(
            res.policy,
            e,
            ordered.filter((r) => byId.get(r.delivery_id)?.endpointId === e.id),
            at,
          ),
        );
        const enabled = new Map(deliveries.endpoints.map((e) => [e.id, e.enabled]));
        for (const s of streaks) if (s.disabledReason !== null) enabled.set(s.id, false);

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
            updates.set(d.id, afterFailure(res.policy, d.id, r.attempt, r.result.status, r.result.retry_after_ms, enabled.get(d.endpointId) ?? false));
          }
        }
        // Sent together (one round trip): none reads what another writes.
        await Promise.all([
          repo.insertAttempts(known.map((r) => attemptRow(r.delivery_id, r.attempt, r.attempted_at, r.result))),
          repo.updateStreaks(streaks),
          repo.updateDeliveries([...updates.values()]),
        ]);
        // An endpoint disabled here is announced (webhook_endpoint.disabled), as it now stands.
        const disabledIds = streaks.filter((s) => s.disabledReason !== null).map((s) => s.id);
        if (disabledIds.length > 0) {
          const endpoints = endpointsRepo(t);
          await endpoints.events.emit("webhook_endpoint.disabled", await endpoints.subjects(disabledIds));
        }
        return {
          count: known.length,
          finished: [...updates.values()].map((u) => u.state),
          disabled: streaks.flatMap((s) => (s.disabledReason === null ? [] : [s.disabledReason])),
        };
      });
      for (const state of recorded.finished) if (state === "SUCCEEDED" || state === "FAILED" || state === "DISABLED") webhookDeliveriesFinished.inc({ state });
      for (const reason of recorded.disabled) webhookEndpointsDisabled.inc({ reason });
      if (recorded.disabled.length > 0) res.written();
      res.wake();
      return { recorded: recorded.count };
    },
  };
}
export type AttemptsService = ReturnType<typeof attemptsService>;
