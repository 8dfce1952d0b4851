#!/usr/bin/env node
// Prints vitest's JSON results as the plain closing line CI reads ("tests: N passed, N failed"),
// and exits non-zero when anything failed or nothing ran.
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? ".vitest-results.json";
let r;
try {
  r = JSON.parse(readFileSync(file, "utf8"));
} catch (e) {
  console.log("tests: 0 passed, 1 failed");
  console.error(`test-summary: no results in ${file} (${e.message})`);
  process.exit(1);
}
const failed = r.numFailedTests + (r.numFailedTestSuites ?? 0) - (r.testResults ?? []).filter((s) => s.status === "failed" && s.assertionResults?.some((a) => a.status === "failed")).length;
const skipped = r.numPendingTests + r.numTodoTests;
console.log(`tests: ${r.numPassedTests} passed, ${Math.max(failed, r.numFailedTests)} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(r.success && r.numPassedTests > 0 ? 0 : 1);
