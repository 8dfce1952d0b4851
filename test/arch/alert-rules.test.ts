// The alerting rules (deploy/prometheus/rules.yaml) checked by Prometheus' own tool: `promtool check
// rules` parses every expression, `promtool test rules` runs the unit tests of rules.test.yaml on
// made-up series. Then the facts around them: every alert has a firing case, speaks to an operator,
// names only metrics that exist, and the PrometheusRule of the kustomize base carries the same
// groups. Needs promtool: Debian's `apt-get install -y prometheus` (2.42); PROMTOOL names another.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SERVICES } from "@tasksvc/contracts";
import { registry } from "@tasksvc/telemetry";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { metricNames } from "../e2e/promql-names.js";
import { named, type Obj, OVERLAYS, render, root } from "./kustomize.js";

const PROMTOOL = process.env.PROMTOOL || "promtool";
const INSTALL_PROMTOOL = "apt-get install -y prometheus";
const RULES = "deploy/prometheus/rules.yaml";
const RULE_TESTS = "deploy/prometheus/rules.test.yaml";
const PROCESSES = SERVICES.map((s) => s.name);

/** Runs promtool; a missing binary fails the test (never skips it) and says how to install one. */
function promtool(...args: string[]): { status: number | null; output: string } {
  const r = spawnSync(PROMTOOL, args, { cwd: root, encoding: "utf8", timeout: 60_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT")
    throw new Error(
      `promtool not found (${PROMTOOL}): this test checks ${RULES} with \`promtool check rules\` and \`promtool test rules\`. Install it with \`${INSTALL_PROMTOOL}\` (Debian's Prometheus 2.42, which has promtool; a later release works too), or set PROMTOOL to its path.`,
    );
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

const readYaml = (file: string) => parse(readFileSync(join(root, file), "utf8")) as Obj;
const rules = readYaml(RULES);
const alerts: Obj[] = rules.groups.flatMap((g: Obj) => g.rules.filter((r: Obj) => r.alert));

/** Series the processes export (prom-client's registry, histograms with their three suffixes). */
async function exported(): Promise<Set<string>> {
  const families = await registry.getMetricsAsJSON();
  // At run time `type` is the string "histogram" (prom-client's typings say a numeric enum).
  return new Set(families.flatMap((f) => (String(f.type) === "histogram" ? ["_bucket", "_count", "_sum"].map((s) => `${f.name}${s}`) : [f.name])));
}
/** Series from elsewhere: Prometheus' own `up`, and kube-state-metrics (kube_*). */
const EXTERNAL = new Set(["up", "kube_deployment_status_replicas_available", "kube_deployment_spec_replicas", "kube_pod_status_ready"]);
/** Figures read from a server (Postgres, JetStream) that every replica reports alike. */
const SERVER_SIDE = /tasksvc_(?:outbox_backlog_rows|outbox_oldest_row_age_seconds|jetstream_consumer_\w*messages)\b/g;

describe(RULES, () => {
  it("when promtool checks the rule file, then every expression and template is valid", () => {
    const r = promtool("check", "rules", RULES);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it(`when promtool runs ${RULE_TESTS}, then every alert fires, or stays quiet, as its cases expect`, () => {
    const r = promtool("test", "rules", RULE_TESTS);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain("SUCCESS");
    // promtool evaluates every case's series minute by minute: seconds of CPU, more on busy cores.
  }, 90_000);

  it("when an alert is defined, then a unit test case makes it fire", () => {
    const tests = readYaml(RULE_TESTS);
    expect(tests.rule_files).toEqual(["rules.yaml"]);
    const fired = new Set<string>(
      tests.tests.flatMap((t: Obj) => (t.alert_rule_test ?? []).filter((c: Obj) => (c.exp_alerts ?? []).length > 0).map((c: Obj) => c.alertname)),
    );
    const names: string[] = alerts.map((a) => a.alert);
    expect(new Set(names).size, "alert names are unique").toBe(names.length);
    expect(
      names.filter((n) => !fired.has(n)),
      `alerts with no case in ${RULE_TESTS} that expects them to fire`,
    ).toEqual([]);
    expect(
      [...fired].filter((n) => !names.includes(n)),
      "cases for alerts that do not exist",
    ).toEqual([]);
  });

  it("when an alert fires, then it has waited its `for`, says page or ticket, and tells an operator what happened and where to read more", () => {
    const problems: string[] = [];
    for (const a of alerts) {
      if (!/^\d+[smh]$/.test(a.for ?? "")) problems.push(`${a.alert}: for ${a.for}`);
      if (!["page", "ticket"].includes(a.labels?.severity)) problems.push(`${a.alert}: severity ${a.labels?.severity}`);
      expect(Object.keys(a.annotations ?? {}).sort(), a.alert).toEqual(["description", "runbook", "summary"]);
      if (!/^Operations guide, "[^"]+"/.test(a.annotations.runbook)) problems.push(`${a.alert}: runbook names no section of the operations guide`);
      for (const [k, v] of Object.entries<string>(a.annotations))
        if (/#\d|\b(?:issue|decision)s? \d|\b(?:src|libs|services)\/|\.(?:ts|mjs)\b|https?:/i.test(v))
          problems.push(`${a.alert}: ${k} cites code or issues: ${v}`);
    }
    expect(problems).toEqual([]);
  });

  it("when an alert names a metric, then a process exports it, or it is Prometheus' `up` or kube-state-metrics'", async () => {
    const known = await exported();
    const unknown = alerts.flatMap((a) =>
      metricNames(a.expr)
        .filter((m) => !known.has(m) && !EXTERNAL.has(m))
        .map((m) => `${a.alert}: ${m}`),
    );
    expect(unknown).toEqual([]);
    expect(alerts.flatMap((a) => metricNames(a.expr)).filter((m) => m.startsWith("tasksvc_")).length).toBeGreaterThan(10);
  });

  it("when a figure every replica reports alike is aggregated, then with max, never sum", () => {
    const summed = alerts.flatMap((a) =>
      [...String(a.expr).matchAll(SERVER_SIDE)]
        .filter((m) => !/\bmax(?:\s+by\s*\([^)]*\))?\s*\($/.test(String(a.expr).slice(0, m.index)))
        .map((m) => `${a.alert}: ${m[0]}`),
    );
    expect(summed).toEqual([]);
  });

  it("when the alerts select Deployments, pods or scrape jobs by name, then by the names of every process and its metrics Service", () => {
    const lists = alerts.flatMap((a) => [...String(a.expr).matchAll(/=~"\(?([a-z|]+)\)?/g)].map((m) => m[1] as string).filter((l) => l.includes("gateway")));
    expect(lists.length).toBeGreaterThanOrEqual(3);
    for (const l of lists) expect(l.split("|").sort(), l).toEqual([...PROCESSES].sort());
    expect(alerts.find((a) => a.alert === "TasksvcScrapeFailing")?.expr).toContain('-metrics"');
    for (const overlay of OVERLAYS) {
      const metricServices = named(render(overlay), "Service").filter((s) => s.metadata.labels?.["app.kubernetes.io/component"] === "metrics");
      // The Prometheus Operator names a ServiceMonitor's job after the Service.
      expect(metricServices.map((s) => s.metadata.name).sort(), overlay).toEqual(PROCESSES.map((p) => `${p}-metrics`).sort());
    }
  });
});

describe("docs/operations.md, Alerts worth having", () => {
  it("when an operator reads the table of alerts, then it lists exactly the alerts of rules.yaml, each with its severity", () => {
    const doc = readFileSync(join(root, "docs/operations.md"), "utf8");
    const start = doc.indexOf("\n### Alerts worth having\n");
    expect(start, "the section exists").toBeGreaterThan(0);
    const section = doc.slice(start, doc.indexOf("\n## ", start));
    const rows = [...section.matchAll(/^\| `(\w+)` \| (\w+) \|/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(rows.sort()).toEqual(alerts.map((a) => `${a.alert} ${a.labels.severity}`).sort());
    expect(section).toContain("deploy/prometheus/rules.yaml");
  });
});

describe("deploy/k8s/base/prometheus-rule.yaml", () => {
  it("when rules.yaml changes, then the PrometheusRule is regenerated: the committed file is what the script writes", () => {
    const r = spawnSync(process.execPath, [join(root, "scripts/gen-prometheus-rule.mjs"), "--stdout"], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const committed = readFileSync(join(root, "deploy/k8s/base/prometheus-rule.yaml"), "utf8");
    expect(committed === r.stdout, `deploy/k8s/base/prometheus-rule.yaml is stale: run \`node scripts/gen-prometheus-rule.mjs\``).toBe(true);
  });

  it.each(OVERLAYS)("when the %s overlay is rendered, then its one PrometheusRule carries exactly the groups of rules.yaml", (overlay) => {
    const prs = named(render(overlay), "PrometheusRule");
    expect(prs).toHaveLength(1);
    expect(prs[0]?.spec.groups).toEqual(rules.groups);
    expect(prs[0]?.metadata.labels?.["app.kubernetes.io/part-of"]).toBe("tasksvc");
  });
});
