import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = fileURLToPath(new URL("../src/", import.meta.url));
/** Files of the gateway past this are split by concern, so that wave after wave of routes stays readable. */
const MAX_LINES = 300;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") ? [relative(src, p)] : [];
  });
}

/** The files a source file imports by a relative path, `import type` included, as paths under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(src, file), "utf8");
  return [...text.matchAll(/(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/g)].map((m) => {
    const target = normalize(join(dirname(file), (m[1] ?? "").replace(/\.js$/, ".ts")));
    expect(existsSync(join(src, target)), `${file} imports ${m[1]}`).toBe(true);
    return target;
  });
}

/** Every file `entry` loads, directly or not. */
function reach(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    for (const next of importsOf(file)) {
      if (seen.has(next)) continue;
      seen.add(next);
      visit(next);
    }
  };
  visit(entry);
  return [...seen].sort();
}

describe("the gateway's layers", () => {
  it("when the operation table or the documentation is loaded, then none of the serving code comes with it: no live stream, no route plugin, no pipeline hooks", () => {
    const serving = (f: string) => f.startsWith("streams/") || f === "pipeline/serve.ts" || f === "pipeline/hooks.ts" || f === "app.ts";
    for (const entry of ["pipeline/operation.ts", "pipeline/resource.ts", "openapi/document.ts", "openapi/docs-page.ts"]) {
      expect(reach(entry).filter(serving), entry).toEqual([]);
    }
  });

  it("when a route file is loaded, then it reaches neither the HTTP edge nor the live streams: routes only say what an operation forwards", () => {
    const routes = sources(src).filter((f) => f.startsWith("routes/"));
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) {
      expect(
        reach(route).filter((f) => f.startsWith("http/") || f.startsWith("streams/") || f === "app.ts"),
        route,
      ).toEqual([]);
    }
  });

  it(`when a source file of the gateway grows, then it stays at ${MAX_LINES} lines or fewer`, () => {
    const long = sources(src)
      .map((file) => ({ file, lines: readFileSync(join(src, file), "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > MAX_LINES)
      .map((f) => `${f.file}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });
});
