import { expect } from "vitest";
import type { VerifyReport } from "./load.js";
import type { UnexpectedExit } from "./processes.js";

/**
 * A load with no fault, verified: every acknowledged write stored once with one event per change,
 * nothing answered 5xx, and no replica exited on its own.
 */
export function expectClean(report: VerifyReport, unexpectedExits: readonly UnexpectedExit[]): void {
  expect(report.problems).toEqual([]);
  for (const k of report.kinds) {
    expect(k.acknowledged, `${k.kind}: nothing acknowledged`).toBeGreaterThan(0);
    expect({ kind: k.kind, lost: k.lost, duplicated: k.duplicated, stored: k.stored }).toEqual({
      kind: k.kind,
      lost: 0,
      duplicated: 0,
      stored: k.acknowledged,
    });
  }
  expect(report.events.stored, JSON.stringify(report.events)).toBe(report.events.expected);
  // Nothing failed, so nothing may answer 5xx (the old pool answered 500 to 4-15% of transactions).
  expect({ answers5xx: report.serverErrors.total, byCode: report.serverErrors.byCode, samples: report.serverErrors.samples }).toEqual({
    answers5xx: 0,
    byCode: {},
    samples: [],
  });
  expect(unexpectedExits.map((e) => `${e.service}#${e.index} ${e.code ?? e.signal}: ${e.output.slice(-1500)}`)).toEqual([]);
}
