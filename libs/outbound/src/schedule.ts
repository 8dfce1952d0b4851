import { z } from "zod";

/**
 * The delivery retry schedule (DESIGN §5, setting WEBHOOK_RETRY_DELAYS in §6).
 *
 * Indexing: `delays[i]` is the wait before attempt i+1, counted from the previous attempt (for
 * attempt 1, from the event). With the default, attempt 1 goes at once, attempt 2 five seconds
 * after attempt 1 failed, …, attempt 8 ten hours after attempt 7; when attempt 8 fails there is no
 * delays[8], so the delivery is FAILED. The list's length is therefore the number of attempts.
 */

export const DEFAULT_RETRY_DELAYS = "0,5s,5m,30m,2h,5h,10h,10h";

/** ±10%: spreads the retries of one outage so a recovering receiver is not hit all at once. */
export const JITTER = 0.1;

/**
 * Upper bound on a Retry-After we honour. The header is set by the receiver, so without a bound one
 * response could park a delivery for years; 24 h is beyond the schedule's longest step (10 h) but
 * short enough that the delivery still lands or fails within about a day of the hint.
 */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * "250ms", "5s", "5m", "2h", "5d" or "0" → milliseconds. Strict: a whole number with a unit, so
 * "5" (seconds? milliseconds?) and "1.5h" are rejected rather than guessed; "0" alone needs none.
 */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (t === "0") return 0;
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(t);
  const amount = m?.[1];
  const unit = m?.[2] as keyof typeof UNIT_MS | undefined;
  if (amount === undefined || unit === undefined) {
    throw new Error(`${JSON.stringify(text)} is not a duration: expected a whole number with a unit (ms, s, m, h, d), e.g. 250ms, 5s, 5m, 2h, 5d, or 0`);
  }
  const ms = Number(amount) * UNIT_MS[unit];
  if (!Number.isSafeInteger(ms)) throw new Error(`${JSON.stringify(text)} is too long a duration`);
  return ms;
}

/** "0,5s,5m,…" → milliseconds per attempt. At least one entry (else no attempt is ever made). */
export function parseRetryDelays(text: string): number[] {
  const items = text.split(",").map((s) => s.trim());
  if (items.length === 1 && items[0] === "") throw new Error("retry delays are empty: list at least one delay, e.g. 0,5s,5m");
  return items.map((item, i) => {
    try {
      return parseDuration(item);
    } catch (e) {
      throw new Error(`retry delay ${i + 1} of ${items.length}: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
}

/** The WEBHOOK_RETRY_DELAYS setting for a process's config schema. */
export const webhookRetryDelays = z
  .string()
  .default(DEFAULT_RETRY_DELAYS)
  .transform((value, ctx) => {
    try {
      return parseRetryDelays(value);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: e instanceof Error ? e.message : String(e) });
      return z.NEVER;
    }
  });

/**
 * The wait before the next attempt, given how many attempts were already made, or `null` when the
 * schedule is exhausted (the delivery becomes FAILED). `random` returns a value in [0, 1]: 0 gives
 * -10%, 0.5 the exact delay, 1 gives +10%.
 */
export function nextAttemptDelay(delays: readonly number[], attemptsMade: number, random: () => number = Math.random): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 0) throw new Error(`attemptsMade must be a whole number >= 0, got ${attemptsMade}`);
  const base = delays[attemptsMade];
  if (base === undefined) return null;
  return Math.round(base * (1 + JITTER * (2 * random() - 1)));
}

const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * A Retry-After header (RFC 9110 §10.2.3) as milliseconds from `now`: delta-seconds or an HTTP-date
 * in IMF-fixdate form (the form senders must generate; the obsolete RFC 850 and asctime forms are
 * not accepted). A date in the past gives 0; anything else gives undefined, so the schedule alone
 * applies. Capped at MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(headerValue: string | null | undefined, now: Date): number | undefined {
  if (headerValue === null || headerValue === undefined) return undefined;
  const v = headerValue.trim();
  let ms: number;
  if (/^\d+$/.test(v)) {
    ms = Number(v) * 1000;
  } else if (IMF_FIXDATE.test(v)) {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - now.getTime());
  } else {
    return undefined;
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

/** Statuses whose Retry-After we honour (DESIGN §5): rate limited, or briefly unavailable. */
const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export interface FailureInput {
  delays: readonly number[];
  /** Attempts made so far, including the one that just failed. */
  attemptsMade: number;
  /** HTTP status of the failed attempt, or undefined when there was no response (timeout, refused). */
  status: number | undefined;
  /** The response's Retry-After, already parsed with `retryAfterMs`. */
  retryAfterMs: number | undefined;
  random?: () => number;
}

/**
 * The wait before the next attempt after a failure, or `null` when attempts are exhausted.
 *
 * On 429/503 with a Retry-After, the later of the scheduled (jittered) delay and Retry-After wins:
 * Retry-After is the receiver's "not before", so we never come back sooner; and the schedule stays
 * a floor so "Retry-After: 0" cannot turn the backoff into a tight loop. Retry-After never adds
 * attempts: when the schedule is exhausted the delivery fails regardless.
 */
export function delayAfterFailure(input: FailureInput): number | null {
  const scheduled = nextAttemptDelay(input.delays, input.attemptsMade, input.random);
  if (scheduled === null) return null;
  if (input.status === undefined || !RETRY_AFTER_STATUSES.has(input.status) || input.retryAfterMs === undefined) return scheduled;
  return Math.max(scheduled, input.retryAfterMs);
}
