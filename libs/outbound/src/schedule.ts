import { z } from "zod";

// `delays[i]` is the wait before attempt i+1, counted from the previous attempt (for attempt 1, from the event): the list's length is the number of attempts.
export const DEFAULT_RETRY_DELAYS = "0,5s,5m,30m,2h,5h,10h,10h";

/** Spreads the retries of one outage so a recovering receiver is not hit all at once. */
export const JITTER = 0.1;

/** The receiver sets the header, so without a bound one response could park a delivery for years; 24 h is beyond the schedule's longest step. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Strict: "5" (seconds? milliseconds?) and "1.5h" are refused rather than guessed. */
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

/** At least one entry, else no attempt is ever made. */
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

/** `null` when the schedule is exhausted; `random` in [0, 1], 0.5 giving the exact delay. */
export function nextAttemptDelay(delays: readonly number[], attemptsMade: number, random: () => number = Math.random): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 0) throw new Error(`attemptsMade must be a whole number >= 0, got ${attemptsMade}`);
  const base = delays[attemptsMade];
  if (base === undefined) return null;
  return Math.round(base * (1 + JITTER * (2 * random() - 1)));
}

const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** Delta-seconds or an IMF-fixdate (the form senders must generate); anything else gives undefined, so the schedule alone applies. */
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

const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export interface FailureInput {
  delays: readonly number[];
  /** Including the one that just failed. */
  attemptsMade: number;
  status: number | undefined;
  retryAfterMs: number | undefined;
  random?: () => number;
}

/**
 * On 429/503 the later of the schedule and Retry-After wins: Retry-After is the receiver's "not
 * before", and the schedule stays a floor so "Retry-After: 0" cannot make a tight loop. It never
 * adds attempts.
 */
export function delayAfterFailure(input: FailureInput): number | null {
  const scheduled = nextAttemptDelay(input.delays, input.attemptsMade, input.random);
  if (scheduled === null) return null;
  if (input.status === undefined || !RETRY_AFTER_STATUSES.has(input.status) || input.retryAfterMs === undefined) return scheduled;
  return Math.max(scheduled, input.retryAfterMs);
}
