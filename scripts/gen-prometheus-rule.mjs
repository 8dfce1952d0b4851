#!/usr/bin/env node
// Writes deploy/k8s/base/prometheus-rule.yaml, the PrometheusRule the kustomize base applies, from
// deploy/prometheus/rules.yaml, so the alerting rules are written once. The groups are that file's
// text indented under `spec:` (its comments come along), then parsed back and compared with the
// source. `--stdout` prints instead of writing: test/arch/alert-rules.test.ts compares that with
// the committed file and fails while they differ.
import { readFileSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { parse } from "yaml";

const source = new URL("../deploy/prometheus/rules.yaml", import.meta.url);
const target = new URL("../deploy/k8s/base/prometheus-rule.yaml", import.meta.url);

const HEADER = `# Generated from deploy/prometheus/rules.yaml by \`node scripts/gen-prometheus-rule.mjs\`: edit that
# file, then run the script (a test fails while the two differ).
# Prometheus Operator: the alerting rules (docs/operations.md, "Alerts worth having"). Your
# Prometheus must select PrometheusRules with these labels (kube-prometheus-stack: ruleSelector,
# often \`release: <its release name>\`), and kube-state-metrics must run for the kube_* alerts.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: tasksvc
  labels:
    app.kubernetes.io/part-of: tasksvc
spec:
`;

const text = readFileSync(source, "utf8");
const rules = parse(text);
if (Object.keys(rules ?? {}).join() !== "groups") throw new Error(`${source.pathname}: expected only \`groups:\` at the top level`);
// The file's own header (the comment lines before `groups:`) describes the file, not the rules.
const lines = text.split("\n");
const body = lines.slice(lines.findIndex((l) => l.startsWith("groups:")));
const out = HEADER + body.map((l) => (l === "" ? l : `  ${l}`)).join("\n");

if (!isDeepStrictEqual(parse(out).spec.groups, rules.groups)) throw new Error("the indented groups do not parse back to the source's");
if (process.argv.includes("--stdout")) process.stdout.write(out);
else {
  writeFileSync(target, out);
  console.log(`wrote ${target.pathname}`);
}
