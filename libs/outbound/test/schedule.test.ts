import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  DEFAULT_RETRY_DELAYS,
  MAX_RETRY_AFTER_MS,
  delayAfterFailure,
  nextAttemptDelay,
  parseDuration,
  parseRetryDelays,
  retryAfterMs,
  webhookRetryDelays,
} from "../src/schedule.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const defaults = parseRetryDelays(DEFAULT_RETRY_DELAYS);
const mid = () => 0.5;

describe("parseDuration", () => {
  it("when given each unit, then it returns milliseconds", () => {
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("5s")).toBe(5 * S);
    expect(parseDuration("5m")).toBe(5 * M);
    expect(parseDuration("2h")).toBe(2 * H);
    expect(parseDuration("5d")).toBe(5 * 24 * H);
    expect(parseDuration("0")).toBe(0);
    expect(parseDuration(" 0s ")).toBe(0);
  });

  it("when given garbage, a bare number, a fraction or a negative, then it throws a message with examples", () => {
    for (const bad of ["", "5", "5x", "1.5h", "-5s", "5 s", "s", "5sec", "0x10s", "1e3ms", "five"]) {
      expect(() => parseDuration(bad), bad).toThrow(/is not a duration: expected a whole number with a unit/);
    }
  });

  it("when the duration overflows safe integers, then it throws", () => {
    expect(() => parseDuration(`${"9".repeat(20)}d`)).toThrow(/too long/);
  });
});

describe("parseRetryDelays", () => {
  it("when given the default, then it is the eight delays of DESIGN §5", () => {
    expect(defaults).toEqual([0, 5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H]);
  });

  it("when given one delay, then that is a single attempt", () => {
    expect(parseRetryDelays("0")).toEqual([0]);
  });

  it("when empty, with an empty item or a bad item, then the error says which item", () => {
    expect(() => parseRetryDelays("")).toThrow(/empty/);
    expect(() => parseRetryDelays("0,,5s")).toThrow(/retry delay 2 of 3/);
    expect(() => parseRetryDelays("0,5s,5x")).toThrow(/retry delay 3 of 3: "5x" is not a duration/);
  });

  it("when used as a setting, then unset gives the default and a bad value is an issue", () => {
    const schema = z.object({ WEBHOOK_RETRY_DELAYS: webhookRetryDelays });
    expect(schema.parse({}).WEBHOOK_RETRY_DELAYS).toEqual(defaults);
    expect(schema.parse({ WEBHOOK_RETRY_DELAYS: "1s,2s" }).WEBHOOK_RETRY_DELAYS).toEqual([S, 2 * S]);
    const r = schema.safeParse({ WEBHOOK_RETRY_DELAYS: "1s,soon" });
    expect(r.error?.issues[0]?.message).toMatch(/retry delay 2 of 2/);
  });
});

describe("nextAttemptDelay", () => {
  it("when no attempt was made, then attempt 1 goes at once (delays[0])", () => {
    expect(nextAttemptDelay(defaults, 0, mid)).toBe(0);
  });

  it("when k attempts were made, then the wait is delays[k]", () => {
    expect(nextAttemptDelay(defaults, 1, mid)).toBe(5 * S);
    expect(nextAttemptDelay(defaults, 2, mid)).toBe(5 * M);
    expect(nextAttemptDelay(defaults, 7, mid)).toBe(10 * H);
  });

  it("when every delay has been used, then it returns null (FAILED)", () => {
    expect(nextAttemptDelay(defaults, 8, mid)).toBeNull();
    expect(nextAttemptDelay(defaults, 100, mid)).toBeNull();
    expect(nextAttemptDelay([0], 1, mid)).toBeNull();
  });

  it("when random is 0 or 1, then the jitter is -10% or +10%", () => {
    expect(nextAttemptDelay(defaults, 1, () => 0)).toBe(4.5 * S);
    expect(nextAttemptDelay(defaults, 1, () => 1)).toBe(5.5 * S);
    expect(nextAttemptDelay(defaults, 6, () => 0)).toBe(9 * H);
    expect(nextAttemptDelay(defaults, 6, () => 1)).toBe(11 * H);
    expect(nextAttemptDelay(defaults, 0, () => 1)).toBe(0);
  });

  it("when random is Math.random, then every delay stays within ±10%", () => {
    for (let i = 0; i < 1000; i++) {
      const d = nextAttemptDelay(defaults, 3);
      expect(d).toBeGreaterThanOrEqual(27 * M);
      expect(d).toBeLessThanOrEqual(33 * M);
    }
  });

  it("when attemptsMade is negative or fractional, then it throws", () => {
    expect(() => nextAttemptDelay(defaults, -1)).toThrow(/attemptsMade/);
    expect(() => nextAttemptDelay(defaults, 1.5)).toThrow(/attemptsMade/);
  });
});

describe("retryAfterMs", () => {
  const now = new Date("2025-01-02T03:04:05Z");

  it("when given delta-seconds, then it returns milliseconds", () => {
    expect(retryAfterMs("120", now)).toBe(120 * S);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
  });

  it("when given an IMF-fixdate, then it returns the time until it", () => {
    expect(retryAfterMs("Thu, 02 Jan 2025 03:09:05 GMT", now)).toBe(5 * M);
  });

  it("when the date is in the past, then it returns 0", () => {
    expect(retryAfterMs("Wed, 01 Jan 2025 00:00:00 GMT", now)).toBe(0);
  });

  it("when the value is beyond 24 hours, then it is capped", () => {
    expect(retryAfterMs(String(7 * 24 * 3600), now)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs("Fri, 01 Jan 2100 00:00:00 GMT", now)).toBe(MAX_RETRY_AFTER_MS);
  });

  it("when absent or garbage, then it returns undefined", () => {
    for (const bad of [
      undefined,
      null,
      "",
      "soon",
      "-5",
      "1.5",
      "5s",
      "2025-01-02T03:09:05Z",
      "Thu, 32 Jan 2025 03:09:05 GMT",
      "Thu, 02 Jan 2025 03:09:05 PST",
    ]) {
      expect(retryAfterMs(bad, now), String(bad)).toBeUndefined();
    }
  });
});

describe("delayAfterFailure", () => {
  const base = { delays: defaults, attemptsMade: 1, random: mid };

  it("when the failure has no Retry-After, then the schedule applies", () => {
    expect(delayAfterFailure({ ...base, status: 500, retryAfterMs: undefined })).toBe(5 * S);
    expect(delayAfterFailure({ ...base, status: undefined, retryAfterMs: undefined })).toBe(5 * S);
  });

  it("when a 429 or 503 asks for longer than the schedule, then Retry-After wins", () => {
    expect(delayAfterFailure({ ...base, status: 429, retryAfterMs: 2 * M })).toBe(2 * M);
    expect(delayAfterFailure({ ...base, status: 503, retryAfterMs: 2 * M })).toBe(2 * M);
  });

  it("when a 429 asks for less than the schedule, then the schedule wins", () => {
    expect(delayAfterFailure({ ...base, status: 429, retryAfterMs: 0 })).toBe(5 * S);
  });

  it("when another status sends Retry-After, then it is ignored", () => {
    expect(delayAfterFailure({ ...base, status: 500, retryAfterMs: 2 * M })).toBe(5 * S);
    expect(delayAfterFailure({ ...base, status: 302, retryAfterMs: 2 * M })).toBe(5 * S);
  });

  it("when the schedule is exhausted, then Retry-After does not add an attempt", () => {
    expect(delayAfterFailure({ ...base, attemptsMade: 8, status: 429, retryAfterMs: M })).toBeNull();
  });
});
