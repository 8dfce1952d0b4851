import type { Task } from "@tasksvc/contracts";
import { expect } from "vitest";
import { apiTask } from "@tasksvc/testing";

// Values and checks of the delivery-stats tests that hold no state of their own.

/** The task every fanned-out event carries. */
export const task: Task = apiTask("counted");

/** Exact up to 100 ms, within 2.6% above (the histogram's bound). */
export function expectNear(got: number | null, exact: number | null, what: string) {
  if (exact === null || exact <= 100) expect(got, what).toBe(exact);
  else expect(Math.abs((got ?? Number.NaN) - exact), `${what}: ${got} for ${exact}`).toBeLessThanOrEqual(0.026 * exact);
}

export const minutes = (n: number) => n * 60_000;
/**
 * Windows: inside a minute days back, on a minute and an hour boundary, the default, out of range,
 * in the future; and two inside the minute `edge` (a whole minute with deliveries 5, 25, 45 and
 * 65 s into it), so that its first, partial minute holds rows.
 */
export function windows(edge: number): Array<string | undefined> {
  const now = Date.now();
  const floor = (t: number, unit: number) => Math.floor(t / unit) * unit;
  return [
    undefined,
    new Date(edge + 20_000).toISOString(),
    new Date(edge + 25_000).toISOString(),
    new Date(now - minutes(60 * 60 + 17) - 17_123).toISOString(),
    new Date(now - minutes(137) - 29_500).toISOString(),
    new Date(floor(now - minutes(95), minutes(1))).toISOString(),
    new Date(floor(now - minutes(60 * 5), minutes(60))).toISOString(),
    new Date(now - minutes(50)).toISOString(),
    new Date(now - 45 * minutes(24 * 60)).toISOString(),
    new Date(now + minutes(10)).toISOString(),
  ];
}
