// The Kubernetes overlays as `kubectl kustomize` renders them, shared by the tests of deploy/k8s
// (deploy.test.ts validates every object; network-policy.test.ts and alert-rules.test.ts read
// theirs). Needs kubectl (any version from 1.20: Debian's `apt-get install -y kubernetes-client`);
// KUBECTL names another binary.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const root = fileURLToPath(new URL("../..", import.meta.url));
const KUBECTL = process.env.KUBECTL || "kubectl";
const INSTALL_KUBECTL = "apt-get install -y kubernetes-client";
export const OVERLAYS = ["dev", "production"] as const;
export type Overlay = (typeof OVERLAYS)[number];

// Plain JSON as parsed from YAML; the facts read it loosely and assert what they need.
// biome-ignore lint/suspicious/noExplicitAny: parsed manifests, checked field by field by the tests
export type Obj = Record<string, any>;

const rendered = new Map<Overlay, Obj[]>();
/** The overlay as `kubectl kustomize` renders it (kustomize v2.0.3 in kubectl 1.20, v5 in current ones). */
export function render(overlay: Overlay): Obj[] {
  const cached = rendered.get(overlay);
  if (cached) return cached;
  const dir = join(root, "deploy/k8s/overlays", overlay);
  const r = spawnSync(KUBECTL, ["kustomize", dir], { encoding: "utf8", timeout: 30_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT")
    throw new Error(
      `kubectl not found (${KUBECTL}): this test renders deploy/k8s with \`kubectl kustomize\`. Install it with \`${INSTALL_KUBECTL}\` (Debian's kubectl 1.20; any later kubectl works too), or set KUBECTL to its path.`,
    );
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${KUBECTL} kustomize ${dir} failed:\n${r.stderr}`);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj | null);
  const objs = docs.filter((d): d is Obj => d !== null);
  rendered.set(overlay, objs);
  return objs;
}

export const named = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
export const nameOf = (o: Obj) => `${o.kind}/${o.metadata?.name}`;
/** The Deployment named `name`; throws when there is none. */
export function deployment(objs: Obj[], name: string): Obj {
  const found = named(objs, "Deployment").find((d) => d.metadata.name === name);
  if (found === undefined) throw new Error(`no Deployment ${name} among ${objs.map(nameOf).join(", ")}`);
  return found;
}
/** Whether a non-empty matchLabels-style selector selects these labels. */
export const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
