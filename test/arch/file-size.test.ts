import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** Generated from docs/openapi.json, not written by hand. */
const GENERATED = new Set(["libs/client/src/schema.ts"]);
const MAX_LINES = 400;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name === "dist") return [];
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

describe("source files", () => {
  it(`when a hand-written source file in libs/, services/ or tools/ grows, then it stays at ${MAX_LINES} lines or fewer (one concern per file)`, () => {
    const files = ["libs", "services", "tools"].flatMap((d) => sources(join(root, d))).filter((f) => !GENERATED.has(relative(root, f)));
    expect(files.length).toBeGreaterThan(100);
    const long = files
      .map((f) => ({ file: relative(root, f), lines: readFileSync(f, "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > MAX_LINES)
      .map((f) => `${f.file}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });

  it("when a source file of the tasks or the gateway service grows, then it stays at 300 lines or fewer (the two services every new feature passes through)", () => {
    const files = ["services/tasks/src", "services/gateway/src"].flatMap((d) => sources(join(root, d)));
    expect(files.length).toBeGreaterThan(40);
    const long = files
      .map((f) => ({ file: relative(root, f), lines: readFileSync(f, "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > 300)
      .map((f) => `${f.file}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });
});
