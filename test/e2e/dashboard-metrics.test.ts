// The Grafana dashboards (deploy/grafana/*.json) and the alerting rules (deploy/prometheus/rules.yaml)
// read only metrics the processes export: every metric name in every PromQL expression is looked up
// among the families the running stack's processes announce on /metrics (each replica's ops port),
// so a family renamed or dropped in the code, or misspelt in a panel, fails here rather than
// leaving an empty panel or an alert that can never fire. Names from other exporters come from a
// short list below. This file runs its own stack, for the ops ports.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { SERVICES } from "@tasksvc/contracts";
import { startStack, type StartedStack } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { dashboardQueries, metricNames, type Query } from "./promql-names.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const DASHBOARDS = "deploy/grafana";
const RULES = "deploy/prometheus/rules.yaml";

/** Series that come from elsewhere, by name: checked against nothing here, so keep the list short. */
const EXTERNAL: ReadonlyArray<{ name: RegExp; from: string }> = [
  { name: /^kube_/, from: "kube-state-metrics" },
  { name: /^up$/, from: "Prometheus itself (one per scrape target)" },
];

/** The series names a family of this type exports in the text format. */
function seriesOf(family: string, type: string): string[] {
  switch (type) {
    case "histogram":
      return [`${family}_bucket`, `${family}_sum`, `${family}_count`];
    case "summary":
      return [family, `${family}_sum`, `${family}_count`];
    default:
      return [family];
  }
}

/** Every series name announced by `# TYPE` lines of one /metrics page. */
function exportedNames(page: string): string[] {
  return [...page.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, family = "", type = ""]) => seriesOf(family, type));
}

/** The JSON files under deploy/grafana/, at any depth. */
function dashboardFiles(dir = join(root, DASHBOARDS)): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? dashboardFiles(join(dir, e.name)) : e.name.endsWith(".json") ? [relative(root, join(dir, e.name))] : [],
  );
}

type Rules = { groups?: Array<{ name?: string; rules?: Array<{ alert?: string; record?: string; expr?: unknown }> }> };

/** Every expression of the rule file: alerting and recording rules alike. */
function ruleQueries(file: string): Query[] {
  const rules = parse(readFileSync(join(root, file), "utf8")) as Rules;
  return (rules.groups ?? []).flatMap((g) =>
    (g.rules ?? []).map((r) => ({ where: `${g.name}/${r.alert ?? r.record}`, expr: typeof r.expr === "string" ? r.expr : String(r.expr) })),
  );
}

/** What an expression names that no process exports, or why it cannot be read; empty when all is well. */
function problemsOf(queries: Query[], exported: Set<string>): string[] {
  return queries.flatMap(({ where, expr }) => {
    try {
      return metricNames(expr)
        .filter((m) => !exported.has(m) && !EXTERNAL.some((e) => e.name.test(m)))
        .map((m) => `${where}: ${m} is exported by no process`);
    } catch (e) {
      return [`${where}: ${(e as Error).message}`];
    }
  });
}

const sources: Array<[file: string, read: () => Query[]]> = [
  ...dashboardFiles().map((f): [string, () => Query[]] => [f, () => dashboardQueries(JSON.parse(readFileSync(join(root, f), "utf8")))]),
  // Written alongside the dashboards; checked once it exists.
  ...(existsSync(join(root, RULES)) ? [[RULES, () => ruleQueries(RULES)] as [string, () => Query[]]] : []),
];

let stack: StartedStack;
let exported: Set<string>;

beforeAll(async () => {
  stack = await startStack();
  exported = new Set<string>();
  for (const url of Object.values(stack.opsUrls).flat()) {
    const r = await fetch(`${url}/metrics`);
    const page = await r.text();
    expect(r.status, `${url}/metrics: ${page.slice(0, 200)}`).toBe(200);
    for (const name of exportedNames(page)) exported.add(name);
  }
});
afterAll(async () => {
  await stack?.stop();
});

describe("the metric names dashboards and alerting rules use", () => {
  it("when every process of the stack is scraped, then each answers /metrics, announcing the tasksvc families with their types", () => {
    for (const s of SERVICES) expect(stack.opsUrls[s.name]?.length, `${s.name}'s ops ports`).toBeGreaterThan(0);
    expect(exported).toContain("tasksvc_http_request_duration_seconds_bucket");
    expect(exported).toContain("tasksvc_jetstream_consumer_pending_messages");
    expect(exported).toContain("process_cpu_seconds_total");
    expect(exported).not.toContain("tasksvc_http_request_duration_seconds");
  });

  it(`when ${DASHBOARDS} is read, then it holds at least one dashboard`, () => {
    expect(dashboardFiles().length).toBeGreaterThan(0);
  });

  it.each(sources)(
    "when %s is read, then every expression parses and names only metrics a process exports, or kube-state-metrics' or Prometheus' own",
    (file, read) => {
      const queries = read();
      // Some expressions, with names of ours, so that a file emptied or misread cannot pass.
      expect(queries.length, `${file}: expressions`).toBeGreaterThanOrEqual(5);
      expect(
        queries.filter((q) => /\btasksvc_\w+/.test(q.expr)),
        `${file}: expressions naming tasksvc metrics`,
      ).not.toEqual([]);
      expect(problemsOf(queries, exported)).toEqual([]);
    },
  );
});
