// The Grafana dashboards (deploy/grafana/*.json) checked without Grafana: importable as they are
// (a data source variable, no fixed data source or id), laid out on the grid without overlaps,
// written for operators, every expression valid to Prometheus' own parser (`promtool check
// rules`, types included), server-side figures aggregated with max, and the sidecar ConfigMap of
// deploy/grafana/kustomization.yaml carrying each file as it is. That each metric exists is checked
// against the running processes in test/e2e/dashboard-metrics.test.ts.
// Needs promtool (Debian's `apt-get install -y prometheus`; PROMTOOL names another) and kubectl
// (from 1.20; KUBECTL names another), as alert-rules.test.ts and deploy.test.ts do.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { dashboardQueries } from "../e2e/promql-names.js";
import { type Obj, root } from "./kustomize.js";

const DIR = "deploy/grafana";
const files = readdirSync(join(root, DIR)).filter((f) => f.endsWith(".json"));
const dashboards = files.map((f) => [f, JSON.parse(readFileSync(join(root, DIR, f), "utf8")) as Obj] as const);
// Grafana replaces ${datasource} with the data source picked on the dashboard.
const DATASOURCE = { type: "prometheus", uid: `\${datasource}` };

/** Every panel, those inside collapsed rows too. */
const allPanels = (d: Obj): Obj[] => (d.panels ?? []).flatMap((p: Obj) => [p, ...(p.panels ?? [])]);
const nameOf = (p: Obj) => `panel ${p.id} "${p.title}"`;

/** Runs a tool; a missing binary fails the test (never skips it) and says how to get one. */
function run(tool: string, install: string, args: string[]): { status: number | null; output: string } {
  const r = spawnSync(tool, args, { cwd: root, encoding: "utf8", timeout: 60_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT")
    throw new Error(`${tool} not found: install it with \`${install}\`, or name it in the environment.`);
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Figures read from a server (Postgres, JetStream) that every replica reports alike. */
const SERVER_SIDE = /tasksvc_(?:outbox_backlog_rows|outbox_oldest_row_age_seconds|jetstream_consumer_\w*messages|webhook_deliveries_live)\b/g;

it(`when ${DIR} is listed, then it holds dashboards`, () => {
  expect(files.length).toBeGreaterThan(0);
});

describe.each(dashboards)(`${DIR}/%s`, (file, d) => {
  it("when imported into Grafana 10 or later, then it needs no edit: its own uid, no id, and every query on the data source variable", () => {
    expect(d.schemaVersion).toBeGreaterThanOrEqual(38);
    expect(d.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(d.id).toBeNull();
    expect(d.title).toBeTruthy();
    const variables: Obj[] = d.templating?.list ?? [];
    expect(variables.find((v) => v.name === "datasource")).toMatchObject({ type: "datasource", query: "prometheus" });
    for (const v of variables.filter((x) => x.type === "query")) expect(v.datasource, `variable ${v.name}`).toEqual(DATASOURCE);
    for (const p of allPanels(d).filter((x) => x.type !== "row")) {
      expect(p.datasource, nameOf(p)).toEqual(DATASOURCE);
      expect(p.targets?.length, `${nameOf(p)} has queries`).toBeGreaterThan(0);
      for (const t of p.targets) expect(t.datasource ?? DATASOURCE, `${nameOf(p)} ${t.refId}`).toEqual(DATASOURCE);
    }
  });

  it("when laid out, then panel ids are unique and every panel sits inside the 24 columns without overlapping another", () => {
    const ids = allPanels(d).map((p) => p.id);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    expect(ids.length - new Set(ids).size, "repeated panel ids").toBe(0);
    const top: Obj[] = d.panels;
    const overlaps: string[] = [];
    for (const [i, p] of top.entries()) {
      const g = p.gridPos;
      expect(g.x >= 0 && g.y >= 0 && g.w > 0 && g.h > 0 && g.x + g.w <= 24, `${nameOf(p)} ${JSON.stringify(g)}`).toBe(true);
      for (const q of top.slice(i + 1)) {
        const h = q.gridPos;
        if (g.x < h.x + h.w && h.x < g.x + g.w && g.y < h.y + h.h && h.y < g.y + g.h) overlaps.push(`${nameOf(p)} and ${nameOf(q)}`);
      }
    }
    expect(overlaps).toEqual([]);
  });

  it("when an operator reads a panel, then it has a title and a description that cite no code or issue", () => {
    const problems: string[] = [];
    for (const p of allPanels(d)) {
      if (!p.title) problems.push(`panel ${p.id}: no title`);
      if (p.type !== "row" && !p.description) problems.push(`${nameOf(p)}: no description`);
      for (const text of [p.title, p.description, d.description].filter(Boolean))
        if (/#\d|\b(?:issue|decision)s? \d|\b(?:src|libs|services)\/|\.(?:ts|mjs)\b|https?:/i.test(text))
          problems.push(`${nameOf(p)} cites code or issues: ${text}`);
    }
    expect(problems).toEqual([]);
  });

  it("when Prometheus parses every expression (promtool check rules), then each is valid, types included", () => {
    const queries = dashboardQueries(d);
    expect(queries.length).toBeGreaterThan(0);
    const groups = queries.map((q, i) => ({ name: `${i} ${q.where}`, rules: [{ record: `dashboard_expression_${i}`, expr: q.expr }] }));
    const dir = mkdtempSync(join(tmpdir(), "dashboard-rules-"));
    try {
      writeFileSync(join(dir, "rules.yaml"), stringify({ groups }));
      const r = run(process.env.PROMTOOL || "promtool", "apt-get install -y prometheus", ["check", "rules", join(dir, "rules.yaml")]);
      expect(r.status, `${file}:\n${r.output}`).toBe(0);
      expect(r.output).toContain(`SUCCESS: ${queries.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when a figure every replica reports alike is aggregated, then with max, never sum", () => {
    const summed = dashboardQueries(d).flatMap((q) =>
      [...q.expr.matchAll(SERVER_SIDE)].filter((m) => !/\bmax(?:\s+by\s*\([^)]*\))?\s*\($/.test(q.expr.slice(0, m.index))).map((m) => `${q.where}: ${m[0]}`),
    );
    expect(summed).toEqual([]);
  });
});

describe(`${DIR}/kustomization.yaml`, () => {
  it("when rendered by kubectl kustomize, then one ConfigMap labelled for Grafana's sidecar holds every dashboard byte for byte, under a fixed name", () => {
    const r = run(process.env.KUBECTL || "kubectl", "apt-get install -y kubernetes-client", ["kustomize", join(root, DIR)]);
    expect(r.status, r.output).toBe(0);
    const objs = parseAllDocuments(r.output)
      .map((doc) => doc.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);
    expect(objs.map((o) => o.kind)).toEqual(["ConfigMap"]);
    const cm = objs[0] as Obj;
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: "1" });
    expect(cm.metadata.name).toBe(parse(readFileSync(join(root, DIR, "kustomization.yaml"), "utf8")).configMapGenerator[0].name);
    expect(Object.keys(cm.data).sort()).toEqual([...files].sort());
    for (const f of files) expect(cm.data[f] === readFileSync(join(root, DIR, f), "utf8"), `${f} in the ConfigMap`).toBe(true);
  });
});
