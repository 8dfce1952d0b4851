import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(join(root, "README.md"), "utf8");
const section = (title: string) => {
  const start = readme.indexOf(`\n## ${title}\n`);
  const next = readme.indexOf("\n## ", start + 1);
  return start < 0 ? "" : readme.slice(start, next < 0 ? undefined : next);
};

describe("README", () => {
  it("when a newcomer reads it, then the benchmark is a short summary and its tables live in docs/performance.md", () => {
    const perf = section("Performance");
    expect(perf, "a Performance section").not.toBe("");
    expect(perf.split("\n").length, perf).toBeLessThanOrEqual(30);
    expect(perf).toContain("(docs/performance.md)");
    expect(existsSync(join(root, "docs/performance.md"))).toBe(true);
    const tables = readFileSync(join(root, "docs/performance.md"), "utf8")
      .split("\n")
      .filter((l) => /^\|[-:| ]+\|$/.test(l));
    expect(tables.length).toBeGreaterThanOrEqual(5);
    expect(readme.split("\n").length).toBeLessThan(400);
  });

  it("when a newcomer runs `make run` on a fresh clone, then the README has said how long that takes", () => {
    // A range, not one figure: the first install and build take twice as long on a busy machine.
    expect(section("Two commands")).toMatch(/On a fresh clone `make run` takes [\d\s/½]+ to \d+ minutes/);
  });

  it("when it speaks to users, then it cites no issue or decision numbers and no spec sections", () => {
    const text = readme.replace(/\]\([^)]*\)/g, "]");
    const cited = text.split("\n").filter((l) => /\b(issue|decision)s? \d+|\bspec (section )?\d|\bsection \d/i.test(l));
    expect(cited, cited.join("\n")).toEqual([]);
  });
});
