#!/usr/bin/env node
// Prints vitest's JSON results (one file per suite: the main one, the fault suite) as the plain
// closing line CI reads ("tests: N passed, N failed"), and exits non-zero when anything failed,
// a suite left no results, or nothing ran.
import { readFileSync } from "node:fs";

const files = process.argv.length > 2 ? process.argv.slice(2) : [".vitest-results.json"];
let passed = 0;
let failed = 0;
let skipped = 0;
let ok = true;
for (const file of files) {
  let r;
  try {
    r = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    console.error(`test-summary: no results in ${file} (${e.message})`);
    failed += 1;
    ok = false;
    continue;
  }
  // A file that failed to load counts as a failure even when no test in it ran.
  const brokenFiles = (r.testResults ?? []).filter((s) => s.status === "failed" && !s.assertionResults?.some((a) => a.status === "failed")).length;
  passed += r.numPassedTests;
  failed += r.numFailedTests + brokenFiles;
  skipped += r.numPendingTests + r.numTodoTests;
  if (!r.success || r.numPassedTests === 0) ok = false;
}
console.log(`tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(ok && failed === 0 ? 0 : 1);
