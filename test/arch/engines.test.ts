import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const readJson = (p: string): Record<string, unknown> => JSON.parse(readFileSync(p, "utf8")) as Record<string, unknown>;

/** Every installed package's folder: node_modules of the root and of each workspace, nested ones included. */
function installed(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (!e.isDirectory() || e.name.startsWith(".")) return [];
    const p = join(dir, e.name);
    if (e.name.startsWith("@")) return installed(p);
    if (!existsSync(join(p, "package.json"))) return [];
    return [p, ...installed(join(p, "node_modules"))];
  });
}

const workspaces = ["libs", "services", "tools"].flatMap((d) => readdirSync(join(root, d)).map((w) => join(root, d, w, "node_modules")));
const packages = [join(root, "node_modules"), ...workspaces].flatMap(installed);

const enginesOf = (dir: string): string | undefined => {
  const engines = readJson(join(dir, "package.json"))["engines"];
  const node = typeof engines === "object" && engines !== null && "node" in engines ? engines.node : undefined;
  return typeof node === "string" ? node : undefined;
};

/** The Node versions the README promises: the lowest of each line the root `engines` allows. */
const rootRange = String((readJson(join(root, "package.json"))["engines"] as { node: string }).node);
const floors = new semver.Range(rootRange).set.map((comparators) => semver.minVersion(comparators.map((c) => c.value).join(" "))?.version ?? "");
const imageMajor = /ARG NODE_IMAGE=node:(\d+)/.exec(readFileSync(join(root, "deploy/Dockerfile"), "utf8"))?.[1];

describe("Node versions", () => {
  it("when the README names the supported Node versions, then they are the root engines' lines, the image runs one and so does this run", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    expect(floors).toEqual(["20.19.0", "22.12.0"]);
    expect(readme).toContain("Node.js 20.19+ or 22.12+");
    expect(semver.satisfies(`${imageMajor}.99.0`, rootRange)).toBe(true);
    expect(semver.satisfies(process.versions.node, rootRange), `this run's Node ${process.versions.node}`).toBe(true);
  });

  it("when any installed package declares engines.node, then the lowest supported 20 and 22 and this run's Node satisfy it (npm install prints no EBADENGINE)", () => {
    expect(packages.length).toBeGreaterThan(300);
    const versions = [...floors, process.versions.node];
    const refused = packages.flatMap((dir) => {
      const range = enginesOf(dir);
      if (range === undefined) return [];
      const bad = versions.filter((v) => !semver.satisfies(v, range, { includePrerelease: true }));
      return bad.length === 0 ? [] : [`${relative(root, dir)} needs node ${range} (not ${bad.join(", ")})`];
    });
    expect(refused, refused.join("\n")).toEqual([]);
  });
});
