// The deployment files (deploy/, docker-compose*.yml) checked without a cluster or a Docker engine:
// every Kubernetes overlay rendered by kustomize (`kubectl kustomize`) and every object validated
// against the Kubernetes (or Prometheus Operator) schema of its kind, plus a check that no field
// is unknown to that kind (the schemas themselves allow unknown fields); then the facts the
// operations depend on (probes, resources, disruption budgets, autoscalers, scraping, settings),
// the compose files and the NATS chart values. No network; a few seconds. The NetworkPolicies'
// facts are in network-policy.test.ts, the alerting rules' in alert-rules.test.ts; all three
// render the overlays through kustomize.ts.
// Needs kubectl (any version from 1.20: Debian's `apt-get install -y kubernetes-client`). KUBECTL
// names another binary.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { SERVICE_NODE_FLAGS, SERVICES } from "@tasksvc/contracts";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { deployment, matches, named, nameOf, type Obj, OVERLAYS, render, root } from "./kustomize.js";
import { must } from "@tasksvc/testing";

/**
 * apiVersion/kind → how to validate one object of it. A kind not listed fails the test: add its
 * model here (kubernetes-models, @kubernetes-models/*) together with the manifest that uses it.
 * The second entry names the TypeScript interface used for the unknown-field check.
 */
const MODELS: Record<string, { validate: (o: Obj) => void; type: [module: string, name: string] }> = {
  "v1/ConfigMap": { validate: (o) => new ConfigMap(o).validate(), type: ["kubernetes-models/v1/ConfigMap", "IConfigMap"] },
  "v1/Secret": { validate: (o) => new Secret(o).validate(), type: ["kubernetes-models/v1/Secret", "ISecret"] },
  "v1/Service": { validate: (o) => new Service(o).validate(), type: ["kubernetes-models/v1/Service", "IService"] },
  "apps/v1/Deployment": { validate: (o) => new Deployment(o as Deployment).validate(), type: ["kubernetes-models/apps/v1/Deployment", "IDeployment"] },
  "policy/v1/PodDisruptionBudget": {
    validate: (o) => new PodDisruptionBudget(o).validate(),
    type: ["kubernetes-models/policy/v1/PodDisruptionBudget", "IPodDisruptionBudget"],
  },
  "autoscaling/v2/HorizontalPodAutoscaler": {
    validate: (o) => new HorizontalPodAutoscaler(o as HorizontalPodAutoscaler).validate(),
    type: ["kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler", "IHorizontalPodAutoscaler"],
  },
  "monitoring.coreos.com/v1/ServiceMonitor": {
    validate: (o) => new ServiceMonitor(o as ServiceMonitor).validate(),
    type: ["@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor", "IServiceMonitor"],
  },
  "monitoring.coreos.com/v1/PrometheusRule": {
    validate: (o) => new PrometheusRule(o as PrometheusRule).validate(),
    type: ["@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule", "IPrometheusRule"],
  },
  "networking.k8s.io/v1/NetworkPolicy": {
    validate: (o) => new NetworkPolicy(o as NetworkPolicy).validate(),
    type: ["kubernetes-models/networking.k8s.io/v1/NetworkPolicy", "INetworkPolicy"],
  },
};
const keyOf = (o: Obj) => `${o.apiVersion}/${o.kind}`;

// ---- unknown fields, from the models' TypeScript interfaces (the JSON schemas allow any field) ----

let checker: ts.TypeChecker | undefined;
const rootTypes = new Map<string, ts.Type>();
/** One program over the interfaces named in MODELS; built once (about a second). */
function modelType(key: string): ts.Type {
  if (!checker) {
    const entries = Object.entries(MODELS);
    const virtual = join(root, "test/arch/__deploy-models__.ts");
    const text = entries.map(([, m], i) => `import type { ${m.type[1]} as T${i} } from "${m.type[0]}";\nexport type M${i} = T${i};`).join("\n");
    const options: ts.CompilerOptions = {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: [],
    };
    const host = ts.createCompilerHost(options);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, lang, ...rest) => (name === virtual ? ts.createSourceFile(name, text, lang) : getSourceFile(name, lang, ...rest));
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (name) => name === virtual || fileExists(name);
    const program = ts.createProgram([virtual], options, host);
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (diagnostics.length > 0) throw new Error(ts.formatDiagnostics(diagnostics, host));
    checker = program.getTypeChecker();
    const source = program.getSourceFile(virtual);
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    if (!moduleSymbol) throw new Error("the model types did not load");
    for (const sym of checker.getExportsOfModule(moduleSymbol)) {
      const i = Number(sym.name.slice(1));
      rootTypes.set((entries[i] as [string, unknown])[0], checker.getDeclaredTypeOfSymbol(sym));
    }
  }
  const t = rootTypes.get(key);
  if (!t) throw new Error(`no model type for ${key}`);
  return t;
}

/** Paths of fields the type does not declare (a typo such as `livenesProbe` passes the schema). */
function unknownFields(value: unknown, type: ts.Type, path: string, out: string[]): string[] {
  const c = checker as ts.TypeChecker;
  if (value === null || typeof value !== "object") return out;
  let t = c.getNonNullableType(type);
  if (t.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return out;
  if (t.isUnion()) {
    const objects = t.types.filter((u) => u.flags & ts.TypeFlags.Object);
    if (objects.length !== 1) return out;
    t = objects[0] as ts.Type;
  }
  if (Array.isArray(value)) {
    if (!c.isArrayType(t)) return out;
    const element = c.getTypeArguments(t as ts.TypeReference)[0];
    if (element) for (const [i, v] of value.entries()) unknownFields(v, element, `${path}[${i}]`, out);
    return out;
  }
  if (!(t.flags & ts.TypeFlags.Object)) return out;
  const index = c.getIndexInfoOfType(t, ts.IndexKind.String);
  for (const [k, v] of Object.entries(value)) {
    const prop = c.getPropertyOfType(t, k);
    if (prop) unknownFields(v, c.getTypeOfSymbol(prop), `${path}.${k}`, out);
    else if (index) unknownFields(v, index.type, `${path}.${k}`, out);
    else out.push(`${path}.${k}`);
  }
  return out;
}

// ---- helpers over rendered objects ----

/** Seconds of a duration setting such as "5s", "250ms", "1m". */
function seconds(d: string): number {
  const m = /^(\d+)(ms|s|m)$/.exec(d);
  if (!m) throw new Error(`not a duration: ${d}`);
  return Number(m[1]) / ({ ms: 1000, s: 1, m: 1 / 60 } as Record<string, number>)[m[2] as string];
}
function configOf(objs: Obj[], d: Obj): Record<string, string> {
  const container = d.spec.template.spec.containers[0];
  const refs = (container.envFrom ?? []).map((e: Obj) => e.configMapRef?.name).filter(Boolean);
  expect(refs, `${nameOf(d)} reads its settings from a ConfigMap`).toHaveLength(1);
  const cm = named(objs, "ConfigMap").find((c) => c.metadata.name === refs[0]);
  expect(cm, `${nameOf(d)}: ConfigMap ${refs[0]} is rendered`).toBeDefined();
  const env = Object.fromEntries((container.env ?? []).filter((e: Obj) => typeof e.value === "string").map((e: Obj) => [e.name, e.value]));
  return { ...must(cm, `ConfigMap ${refs[0]}`).data, ...env };
}
const PROCESSES = SERVICES.map((s) => s.name);

describe.each(OVERLAYS)("deploy/k8s/overlays/%s", (overlay) => {
  it("renders, and every object is of a known kind, valid against its schema, with no unknown field", () => {
    const objs = render(overlay);
    expect(objs.length).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const o of objs) {
      const model = MODELS[keyOf(o)];
      if (!model) {
        problems.push(`${nameOf(o)}: no schema for ${keyOf(o)} (add it to MODELS in test/arch/deploy.test.ts)`);
        continue;
      }
      try {
        model.validate(o);
      } catch (e) {
        problems.push(`${nameOf(o)}: ${(e as Error).message}`);
      }
      for (const f of unknownFields(o, modelType(keyOf(o)), nameOf(o), [])) problems.push(`unknown field ${f}`);
    }
    expect(problems).toEqual([]);
  });

  it("has one Deployment per registered process, running that process from the one image", () => {
    const objs = render(overlay);
    const deployments = named(objs, "Deployment");
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...PROCESSES].sort());
    const images = new Set<string>();
    for (const d of deployments) {
      const containers = d.spec.template.spec.containers;
      expect(containers, nameOf(d)).toHaveLength(1);
      expect(containers[0].command, nameOf(d)).toEqual(["node", ...SERVICE_NODE_FLAGS, `services/${d.metadata.name}/dist/main.js`]);
      expect(existsSync(join(root, "services", d.metadata.name, "src/main.ts")), `${nameOf(d)}: services/${d.metadata.name}/src/main.ts`).toBe(true);
      images.add(containers[0].image);
    }
    expect(images.size, "every Deployment runs the same image").toBe(1);
  });

  it("probes /healthz (liveness, startup) and /readyz (readiness) on a declared port: the ops port, the gateway's PORT", () => {
    const objs = render(overlay);
    for (const d of named(objs, "Deployment")) {
      const c = d.spec.template.spec.containers[0];
      const cfg = configOf(objs, d);
      const ports: Obj[] = c.ports ?? [];
      const port = (p: string | number) => ports.find((x) => x.name === p || x.containerPort === p);
      const gateway = d.metadata.name === "gateway";
      const expected = gateway ? Number(cfg.PORT ?? 8080) : Number(cfg.OPS_PORT);
      expect(expected, `${nameOf(d)}: its port setting`).toBeGreaterThan(0);
      for (const [probe, path] of [
        ["livenessProbe", "/healthz"],
        ["startupProbe", "/healthz"],
        ["readinessProbe", "/readyz"],
      ] as const) {
        const get = c[probe]?.httpGet;
        expect(get?.path, `${nameOf(d)} ${probe}`).toBe(path);
        expect(port(get.port)?.containerPort, `${nameOf(d)} ${probe} port ${get.port} is a declared container port serving ${path}`).toBe(expected);
      }
      expect(port("metrics")?.containerPort, `${nameOf(d)} declares the ops port as "metrics"`).toBe(Number(cfg.OPS_PORT));
    }
  });

  it("sets resources, a locked-down security context, and a grace period above SHUTDOWN_DELAY plus the drain", () => {
    const objs = render(overlay);
    for (const d of named(objs, "Deployment")) {
      const pod = d.spec.template.spec;
      const c = pod.containers[0];
      for (const k of ["requests", "limits"])
        for (const r of ["cpu", "memory"]) expect(c.resources?.[k]?.[r], `${nameOf(d)} resources.${k}.${r}`).toBeDefined();
      expect(pod.securityContext?.runAsNonRoot, `${nameOf(d)} runAsNonRoot`).toBe(true);
      expect(pod.securityContext?.runAsUser, `${nameOf(d)}: a numeric non-root user (the image's is the name "node")`).toBeGreaterThan(0);
      expect(pod.securityContext?.seccompProfile?.type ?? c.securityContext?.seccompProfile?.type, `${nameOf(d)} seccomp`).toBe("RuntimeDefault");
      expect(c.securityContext?.readOnlyRootFilesystem, `${nameOf(d)} readOnlyRootFilesystem`).toBe(true);
      expect(c.securityContext?.allowPrivilegeEscalation, `${nameOf(d)} allowPrivilegeEscalation`).toBe(false);
      expect(c.securityContext?.capabilities?.drop, `${nameOf(d)} drops every capability`).toEqual(["ALL"]);
      const cfg = configOf(objs, d);
      // libs/runtime forces the process out SHUTDOWN_DELAY + 10 s after SIGTERM.
      expect(pod.terminationGracePeriodSeconds, `${nameOf(d)} terminationGracePeriodSeconds`).toBeGreaterThan(seconds(cfg.SHUTDOWN_DELAY ?? "0s") + 10);
    }
  });

  it("gives each process the settings and only the secrets it needs", () => {
    const objs = render(overlay);
    for (const d of named(objs, "Deployment")) {
      const cfg = configOf(objs, d);
      expect(cfg.OPS_PORT, nameOf(d)).toBe("9090");
      expect(cfg.SHUTDOWN_DELAY, nameOf(d)).toBe("5s");
      expect(cfg.NATS_URL, nameOf(d)).toBe("nats://nats:4222");
      // Behind the Ingress every client would have the proxy's address (the link routes' limit counts by it).
      if (overlay === "production" && d.metadata.name === "gateway") expect(cfg.TRUST_PROXY, `${nameOf(d)} TRUST_PROXY`).toBeTruthy();
      const c = d.spec.template.spec.containers[0];
      const secretEnv = (c.env ?? []).filter((e: Obj) => e.valueFrom?.secretKeyRef).map((e: Obj) => e.name);
      expect(
        c.envFrom?.some((e: Obj) => e.secretRef),
        `${nameOf(d)}: secrets by key, never a whole Secret`,
      ).toBeFalsy();
      const sealing: Record<string, string> = {
        webhooks: "WEBHOOK_SECRET_KEY",
        keys: "KEYS_SECRET_KEY",
        tasks: "LINK_SIGNING_KEYS",
        gateway: "OAUTH_SIGNING_KEYS",
      };
      const own = sealing[String(d.metadata.name)];
      // A service with a schema: the database, and two optional keys (its own database, the migrations' connection).
      const database = ["DATABASE_URL", `${String(d.metadata.name).toUpperCase()}_DATABASE_URL`, "DATABASE_MIGRATION_URL"];
      const expected = d.metadata.name === "delivery" ? [] : [...database, ...(own ? [own] : [])].sort();
      expect(secretEnv.sort(), `${nameOf(d)} secrets`).toEqual(expected);
      const optional = (c.env ?? []).filter((e: Obj) => e.valueFrom?.secretKeyRef?.optional).map((e: Obj) => e.name);
      expect(optional.sort(), `${nameOf(d)} optional secrets`).toEqual(d.metadata.name === "delivery" ? [] : database.slice(1).sort());
    }
  });

  it("covers every Deployment with a PodDisruptionBudget and a CPU HorizontalPodAutoscaler", () => {
    const objs = render(overlay);
    for (const d of named(objs, "Deployment")) {
      const labels = d.spec.template.metadata.labels;
      expect(matches(d.spec.selector.matchLabels, labels), `${nameOf(d)} selects its own pods`).toBe(true);
      const pdbs = named(objs, "PodDisruptionBudget").filter((p) => matches(p.spec.selector?.matchLabels, labels));
      expect(pdbs, `${nameOf(d)}: one PodDisruptionBudget selects its pods`).toHaveLength(1);
      const hpas = named(objs, "HorizontalPodAutoscaler").filter(
        (h) => h.spec.scaleTargetRef.kind === "Deployment" && h.spec.scaleTargetRef.name === d.metadata.name,
      );
      expect(hpas, `${nameOf(d)}: one HPA targets it`).toHaveLength(1);
      const hpa = must(hpas[0], `the HPA of ${nameOf(d)}`);
      expect(hpa.spec.scaleTargetRef.apiVersion).toBe("apps/v1");
      expect(hpa.spec.minReplicas, nameOf(hpa)).toBeLessThanOrEqual(hpa.spec.maxReplicas);
      expect(
        hpa.spec.metrics.some((m: Obj) => m.type === "Resource" && m.resource?.name === "cpu"),
        `${nameOf(hpa)} scales on CPU`,
      ).toBe(true);
    }
  });

  it("scrapes every process: the ServiceMonitor selects a Service per Deployment whose port exists and reaches the pods' ops port", () => {
    const objs = render(overlay);
    const monitors = named(objs, "ServiceMonitor");
    expect(monitors.length).toBeGreaterThan(0);
    const scraped = new Set<string>();
    for (const sm of monitors) {
      const services = named(objs, "Service").filter((s) => matches(sm.spec.selector?.matchLabels, s.metadata.labels));
      expect(services.length, `${nameOf(sm)} selects Services`).toBeGreaterThan(0);
      for (const ep of sm.spec.endpoints) {
        for (const s of services) {
          const sp = s.spec.ports.find((p: Obj) => p.name === ep.port);
          expect(sp, `${nameOf(s)} has the port "${ep.port}" ${nameOf(sm)} scrapes`).toBeDefined();
          const backing = named(objs, "Deployment").filter((d) => matches(s.spec.selector, d.spec.template.metadata.labels));
          expect(backing, `${nameOf(s)} selects one Deployment's pods`).toHaveLength(1);
          const d = must(backing[0], `the Deployment behind ${nameOf(s)}`);
          const cp = d.spec.template.spec.containers[0].ports.find((p: Obj) => p.name === sp.targetPort || p.containerPort === sp.targetPort);
          expect(cp?.containerPort, `${nameOf(s)} targets ${nameOf(d)}'s ops port`).toBe(Number(configOf(objs, d).OPS_PORT));
          scraped.add(d.metadata.name);
        }
      }
    }
    expect([...scraped].sort()).toEqual([...PROCESSES].sort());
  });

  it("exposes the gateway's HTTP port through a Service", () => {
    const objs = render(overlay);
    const gw = deployment(objs, "gateway");
    const svc = named(objs, "Service").find((s) => s.metadata.name === "gateway");
    expect(svc).toBeDefined();
    expect(matches(svc?.spec.selector, gw.spec.template.metadata.labels)).toBe(true);
    const target = svc?.spec.ports[0].targetPort;
    expect(gw.spec.template.spec.containers[0].ports.find((p: Obj) => p.name === target || p.containerPort === target)?.containerPort).toBe(8080);
  });
});

describe("overlay differences", () => {
  it("production: at least 2 replicas, PDB minAvailable 1, HPA minimums >= 2, three JetStream copies", () => {
    const objs = render("production");
    for (const d of named(objs, "Deployment")) {
      expect(d.spec.replicas, nameOf(d)).toBeGreaterThanOrEqual(2);
      expect(configOf(objs, d).NATS_STREAM_REPLICAS, nameOf(d)).toBe("3");
    }
    for (const p of named(objs, "PodDisruptionBudget")) {
      expect(p.spec.minAvailable, nameOf(p)).toBe(1);
      expect(p.spec.maxUnavailable, nameOf(p)).toBeUndefined();
    }
    for (const h of named(objs, "HorizontalPodAutoscaler")) {
      expect(h.spec.minReplicas, nameOf(h)).toBeGreaterThanOrEqual(2);
      const target = deployment(objs, h.spec.scaleTargetRef.name);
      expect(target.spec.replicas, `${nameOf(h)}: the Deployment starts at the HPA minimum`).toBe(h.spec.minReplicas);
    }
  });

  it("production: the gateway's links and problem types are built on an https PUBLIC_BASE_URL, not on localhost", () => {
    const objs = render("production");
    const gateway = deployment(objs, "gateway");
    expect(configOf(objs, gateway).PUBLIC_BASE_URL).toMatch(/^https:\/\/[^/]+$/);
  });

  it("dev: one replica each, HPA minimum 1, PDBs that never block a drain, smaller requests than production", () => {
    const objs = render("dev");
    const prod = render("production");
    for (const d of named(objs, "Deployment")) {
      expect(d.spec.replicas, nameOf(d)).toBe(1);
      const p = deployment(prod, d.metadata.name);
      const mem = (x: Obj) => x.spec.template.spec.containers[0].resources.requests.memory as string;
      const mib = (q: string) => Number(/^(\d+)Mi$/.exec(q)?.[1] ?? Number.NaN) || Number(/^(\d+)Gi$/.exec(q)?.[1]) * 1024;
      expect(mib(mem(d)), `${nameOf(d)} memory request`).toBeLessThan(mib(mem(p)));
    }
    for (const h of named(objs, "HorizontalPodAutoscaler")) expect(h.spec.minReplicas, nameOf(h)).toBe(1);
    for (const p of named(objs, "PodDisruptionBudget")) {
      expect(p.spec.minAvailable, nameOf(p)).toBeUndefined();
      expect(p.spec.maxUnavailable, nameOf(p)).toBe(1);
    }
  });
});

// ---- Docker ----

const readYaml = (file: string) => parse(readFileSync(join(root, file), "utf8"), { merge: true }) as Obj;

describe("docker-compose.yml", () => {
  const compose = readYaml("docker-compose.yml");
  const services = compose.services as Record<string, Obj>;
  const processOf = (s: Obj) => /^services\/([a-z0-9-]+)\/dist\/main\.js$/.exec(s.command?.at(-1) ?? "")?.[1];

  it("runs every registered process, each with a /readyz healthcheck, a grace period and the image's entry", () => {
    const procs = Object.entries(services).filter(([, s]) => processOf(s));
    expect(procs.map(([, s]) => processOf(s)).sort()).toEqual([...PROCESSES].sort());
    for (const [name, s] of procs) {
      expect(s.command, name).toEqual(["node", ...SERVICE_NODE_FLAGS, `services/${processOf(s)}/dist/main.js`]);
      expect(s.healthcheck?.disable, name).not.toBe(true);
      expect(s.healthcheck?.test, `${name} healthcheck`).toEqual(["CMD", "node", "deploy/healthcheck.mjs", "/readyz"]);
      expect(s.stop_grace_period, `${name} stop_grace_period`).toMatch(/^\d+s$/);
      expect(s.build?.dockerfile, name).toBe("deploy/Dockerfile");
      expect(s.depends_on?.nats?.condition, `${name} waits for a healthy NATS`).toBe("service_healthy");
      if (processOf(s) !== "delivery") expect(s.depends_on?.postgres?.condition, `${name} waits for a healthy Postgres`).toBe("service_healthy");
      expect("WEBHOOK_SECRET_KEY" in (s.environment ?? {}), `${name}: only the webhooks service gets WEBHOOK_SECRET_KEY`).toBe(processOf(s) === "webhooks");
      expect("KEYS_SECRET_KEY" in (s.environment ?? {}), `${name}: only the keys service gets KEYS_SECRET_KEY`).toBe(processOf(s) === "keys");
      expect("LINK_SIGNING_KEYS" in (s.environment ?? {}), `${name}: only the tasks service gets LINK_SIGNING_KEYS`).toBe(processOf(s) === "tasks");
      expect("OAUTH_SIGNING_KEYS" in (s.environment ?? {}), `${name}: only the gateway gets OAUTH_SIGNING_KEYS`).toBe(processOf(s) === "gateway");
    }
    expect(existsSync(join(root, "deploy/healthcheck.mjs"))).toBe(true);
  });

  it("starts the gateway once every service is healthy", () => {
    const others = PROCESSES.filter((p) => p !== "gateway");
    for (const p of others) expect(services.gateway?.depends_on?.[p]?.condition, `gateway waits for ${p}`).toBe("service_healthy");
  });

  it("runs NATS 2.10 or later with JetStream on a volume, and health checks Postgres and NATS", () => {
    const m = /^nats:(\d+)\.(\d+)/.exec(services.nats?.image ?? "");
    expect(m, `nats image ${services.nats?.image}`).not.toBeNull();
    const [major, minor] = [Number(m?.[1]), Number(m?.[2])];
    expect(major > 2 || (major === 2 && minor >= 10), `nats image ${services.nats?.image} is 2.10+`).toBe(true);
    expect(services.nats?.command).toEqual(expect.arrayContaining(["-js", "-sd", "/data"]));
    expect(services.nats?.volumes?.some((v: string) => v.endsWith(":/data"))).toBe(true);
    expect(services.nats?.healthcheck?.test).toBeDefined();
    expect(services.postgres?.healthcheck?.test).toBeDefined();
  });

  it("passes the egress guard's local relaxations from the shell to webhooks and delivery, off by default, as the README's receiver walkthrough needs", () => {
    for (const p of ["webhooks", "delivery"]) expect(services[p]?.environment?.WEBHOOK_ALLOW_HTTP, p).toBe(`\${WEBHOOK_ALLOW_HTTP:-false}`);
    expect(services.delivery?.environment?.WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(`\${WEBHOOK_ALLOW_PRIVATE_TARGETS:-false}`);
    // The receiver runs on the host; the delivery container reaches it by this name on Linux too.
    expect(services.delivery?.extra_hosts).toContain("host.docker.internal:host-gateway");
    const readme = readFileSync(join(root, "README.md"), "utf8");
    expect(readme).toContain("WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_TARGETS=true docker compose up");
    expect(readme).toContain("http://host.docker.internal:9000/hooks");
  });

  it("keeps the admin tool behind its profile", () => {
    expect(services.admin?.profiles).toEqual(["tools"]);
    expect(services.admin?.entrypoint).toEqual(["node", "tools/admin/dist/main.js"]);
  });

  it("docker-compose.test.yml publishes Postgres and NATS on 127.0.0.1 only", () => {
    const test = readYaml("docker-compose.test.yml").services as Record<string, Obj>;
    expect(test.postgres?.ports).toEqual(["127.0.0.1:5432:5432"]);
    expect(test.nats?.ports).toEqual(["127.0.0.1:4222:4222"]);
    expect(Object.keys(test).sort()).toEqual(["nats", "postgres"]);
  });
});

describe("deploy/Dockerfile", () => {
  const text = readFileSync(join(root, "deploy/Dockerfile"), "utf8");
  it("builds on Node 22+ slim, runs as node with source maps and a health check, and labels the image", () => {
    const base = /^ARG NODE_IMAGE=node:(\d+)-\S*slim$/m.exec(text);
    expect(Number(base?.[1]), "node base image").toBeGreaterThanOrEqual(22);
    expect(text).toMatch(/^USER node$/m);
    expect(text).toMatch(/NODE_OPTIONS=--enable-source-maps/);
    expect(text).toMatch(/^HEALTHCHECK .*deploy\/healthcheck\.mjs/m);
    // The image's own command runs a service with the flags every service runs with.
    expect(text).toContain(`CMD ${JSON.stringify(["node", ...SERVICE_NODE_FLAGS, "services/gateway/dist/main.js"]).replaceAll(",", ", ")}`);
    expect(text).toMatch(/npm prune --omit=dev/);
    for (const l of ["title", "description", "source", "licenses", "version"]) expect(text).toContain(`org.opencontainers.image.${l}=`);
    // --enable-source-maps needs the maps: tsconfig.base.json emits them.
    const tsconfig = ts.parseConfigFileTextToJson("tsconfig.base.json", readFileSync(join(root, "tsconfig.base.json"), "utf8")).config;
    expect(tsconfig.compilerOptions.sourceMap).toBe(true);
  });
});

// ---- NATS Helm chart values ----

describe("deploy/nats/values.yaml", () => {
  const v = readYaml("deploy/nats/values.yaml");
  it("asks for a 3-node cluster with JetStream on persistent file storage, metrics and anti-affinity", () => {
    expect(v.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(v.config.jetstream).toMatchObject({ enabled: true, fileStore: { enabled: true, pvc: { enabled: true } } });
    expect(v.config.jetstream.fileStore.pvc.size).toMatch(/^\d+(Mi|Gi|Ti)$/);
    expect(v.config.monitor?.enabled).toBe(true);
    expect(v.promExporter).toMatchObject({ enabled: true, podMonitor: { enabled: true } });
    const anti = v.podTemplate?.merge?.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
    expect(anti?.[0]?.topologyKey).toBe("kubernetes.io/hostname");
  });
  it("matches the replicas the services use in production", () => {
    const cm = must(named(render("production"), "ConfigMap")[0], "the production ConfigMap");
    expect(Number(cm.data.NATS_STREAM_REPLICAS)).toBeLessThanOrEqual(v.config.cluster.replicas);
  });
});
