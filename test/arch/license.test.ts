import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The root manifest and every workspace's, as the root's `workspaces` globs name them. */
function manifests(): string[] {
  const found = ["package.json"];
  for (const dir of ["libs", "services", "tools"])
    for (const name of readdirSync(join(root, dir)).sort()) if (existsSync(join(root, dir, name, "package.json"))) found.push(`${dir}/${name}/package.json`);
  return found;
}

describe("licence", () => {
  it("when someone clones the repository, then it says under which licence they may use it: MIT, in LICENSE", () => {
    expect(existsSync(join(root, "LICENSE"))).toBe(true);
    const text = readFileSync(join(root, "LICENSE"), "utf8");
    expect(text).toMatch(/^MIT License\n/);
    expect(text).toContain("Copyright (c) 2026 the tasksvc authors");
    expect(text).toContain('THE SOFTWARE IS PROVIDED "AS IS"');
  });

  it("when any package's manifest is read (root, libs, services, tools), then it says MIT", () => {
    const files = manifests();
    expect(files.length).toBeGreaterThan(15);
    const other = files
      .map((f) => ({ f, license: (JSON.parse(readFileSync(join(root, f), "utf8")) as { license?: unknown }).license }))
      .filter((m) => m.license !== "MIT")
      .map((m) => `${m.f}: ${JSON.stringify(m.license)}`);
    expect(other).toEqual([]);
  });

  it("when the client is packed for users outside this repository, then its licence text goes with it", () => {
    // npm packs a package's own LICENSE whatever `files` says; the root one is not in the tarball.
    expect(readFileSync(join(root, "libs/client/LICENSE"), "utf8")).toBe(readFileSync(join(root, "LICENSE"), "utf8"));
  });

  it("when the image is built, then its OCI label says MIT and the licence text is in it", () => {
    const dockerfile = readFileSync(join(root, "deploy/Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/^ARG LICENSES=MIT$/m);
    expect(dockerfile).toMatch(/^COPY LICENSE LICENSE$/m);
  });
});
