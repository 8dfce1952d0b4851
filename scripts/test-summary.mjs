#!/usr/bin/env node
// Prints vitest's JSON results (one file per suite: the main one, the fault suite) as the plain
// closing line CI reads ("tests: N passed, N failed"), and exits non-zero when anything failed,
// a suite left no results, or nothing ran. Each failed test is named again at the end with the
// head of its message, so that the last lines of a CI log say what failed.
import { readFileSync } from "node:fs";

const files = process.argv.length > 2 ? process.argv.slice(2) : [".vitest-results.json"];
let passed = 0;
let failed = 0;
let skipped = 0;
let ok = true;
const failures = [];
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes are what it removes.
const plain = (text) => text.replace(/\u001b\[[0-9;]*m/g, "");
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
  for (const suite of r.testResults ?? []) {
    const failedTests = (suite.assertionResults ?? []).filter((a) => a.status === "failed");
    for (const a of failedTests) failures.push({ name: `${suite.name}: ${a.fullName}`, message: (a.failureMessages ?? []).join("\n") });
    if (suite.status === "failed" && failedTests.length === 0) failures.push({ name: suite.name, message: suite.message ?? "" });
  }
  passed += r.numPassedTests;
  failed += r.numFailedTests + brokenFiles;
  skipped += r.numPendingTests + r.numTodoTests;
  if (!r.success || r.numPassedTests === 0) ok = false;
}
for (const f of failures) {
  const lines = plain(f.message)
    .split("\n")
    .filter((l) => l.trim() && !/^\s+at /.test(l));
  console.log(`\n✗ ${f.name.replace(`${process.cwd()}/`, "")}\n  ${lines.slice(0, 30).join("\n  ")}`);
}
console.log(`tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(ok && failed === 0 ? 0 : 1);
