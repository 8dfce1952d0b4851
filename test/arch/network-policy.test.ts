// The NetworkPolicies of deploy/k8s, read from both rendered overlays: which pod ports each policy
// opens, to whom. The processes reach each other only through NATS, so the only ports to open are
// the gateway's API port (to anyone: the Ingress or load balancer) and every ops port (to the
// monitoring namespace, where Prometheus scrapes). Egress stays open on purpose (webhooks go to
// any host on the internet).
import { SERVICES } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { named, nameOf, type Obj, OVERLAYS, render } from "./kustomize.js";

const PROCESSES = SERVICES.map((s) => s.name);
/** Where Prometheus runs: the one peer, besides the gateway's clients, that may open a connection. */
const MONITORING = { "kubernetes.io/metadata.name": "monitoring" };

/** Whether a NetworkPolicy's podSelector selects pods with these labels (an empty one selects all). */
function selects(policy: Obj, labels: Record<string, string>): boolean {
  const sel: Obj = policy.spec.podSelector ?? {};
  expect(sel.matchExpressions, `${nameOf(policy)}: this test reads matchLabels only`).toBeUndefined();
  return Object.entries<string>(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}
const policiesOf = (objs: Obj[], d: Obj) => named(objs, "NetworkPolicy").filter((p) => selects(p, d.spec.template.metadata.labels));
const containerPorts = (d: Obj): Obj[] => d.spec.template.spec.containers.flatMap((c: Obj) => c.ports ?? []);

/** Every (container port, who) a Deployment's pods accept: who is "monitoring" or "anyone". */
function openings(objs: Obj[], d: Obj): string[] {
  const out: string[] = [];
  for (const p of policiesOf(objs, d))
    for (const rule of p.spec.ingress ?? []) {
      const peers: Obj[] = rule.from ?? [];
      const monitoringOnly =
        peers.length > 0 &&
        peers.every(
          (peer) => Object.keys(peer).join() === "namespaceSelector" && JSON.stringify(peer.namespaceSelector) === JSON.stringify({ matchLabels: MONITORING }),
        );
      const who = monitoringOnly ? "monitoring" : "anyone";
      const ports: Obj[] = rule.ports ?? [];
      if (ports.length === 0) out.push(`${d.metadata.name}:every port from ${who}`);
      for (const port of ports) {
        const cp = containerPorts(d).find((c) => c.name === port.port || c.containerPort === port.port);
        out.push(`${d.metadata.name}:${cp?.containerPort ?? port.port} from ${who}`);
      }
    }
  return out;
}

describe.each(OVERLAYS)("NetworkPolicies of deploy/k8s/overlays/%s", (overlay) => {
  it("when a Deployment runs, then its pods are selected by a policy that denies ingress by default", () => {
    const objs = render(overlay);
    const deployments = named(objs, "Deployment");
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...PROCESSES].sort());
    for (const d of deployments) {
      const policies = policiesOf(objs, d);
      const denying = policies.filter((p) => p.spec.policyTypes?.includes("Ingress") && (p.spec.ingress ?? []).length === 0);
      expect(denying.map(nameOf), `${nameOf(d)}: a policy with no ingress rule selects its pods`).toHaveLength(1);
      for (const p of policies) expect(p.spec.policyTypes, `${nameOf(p)} says which directions it governs`).toEqual(["Ingress"]);
    }
  });

  it("when anything outside the monitoring namespace connects, then only the gateway's API port 8080 answers", () => {
    const objs = render(overlay);
    const open = named(objs, "Deployment").flatMap((d) => openings(objs, d));
    expect(open.filter((o) => o.endsWith("from anyone"))).toEqual(["gateway:8080 from anyone"]);
  });

  it("when Prometheus scrapes from the monitoring namespace, then every process's ops port (the one the ServiceMonitor scrapes) is open to it, and only that", () => {
    const objs = render(overlay);
    const ops = Number(named(objs, "ConfigMap")[0]?.data.OPS_PORT);
    expect(ops).toBe(9090);
    for (const d of named(objs, "Deployment")) {
      expect(
        openings(objs, d).filter((o) => o.endsWith("from monitoring")),
        nameOf(d),
      ).toEqual([`${d.metadata.name}:${ops} from monitoring`]);
      expect(containerPorts(d).find((c) => c.name === "metrics")?.containerPort, `${nameOf(d)} port "metrics"`).toBe(ops);
    }
  });

  it("when a policy names a port, then every pod it selects declares that port, with the same protocol", () => {
    const objs = render(overlay);
    const problems: string[] = [];
    for (const p of named(objs, "NetworkPolicy"))
      for (const d of named(objs, "Deployment").filter((x) => selects(p, x.spec.template.metadata.labels)))
        for (const rule of p.spec.ingress ?? [])
          for (const port of rule.ports ?? []) {
            const cp = containerPorts(d).find((c) => c.name === port.port || c.containerPort === port.port);
            if (!cp) problems.push(`${nameOf(p)}: ${nameOf(d)} has no port ${port.port}`);
            else if ((cp.protocol ?? "TCP") !== (port.protocol ?? "TCP")) problems.push(`${nameOf(p)}: ${nameOf(d)} port ${port.port} is ${cp.protocol}`);
          }
    expect(problems).toEqual([]);
  });

  it("when webhook delivery calls any host on the internet, then no policy restricts egress", () => {
    for (const p of named(render(overlay), "NetworkPolicy")) {
      expect(p.spec.policyTypes ?? [], nameOf(p)).not.toContain("Egress");
      expect(p.spec.egress, nameOf(p)).toBeUndefined();
    }
  });
});
