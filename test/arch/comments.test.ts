import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { citesOf, commentsOf, ISSUE_CITE, sourcesOf } from "../../scripts/comment-stats.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The services whose comments are held to citing no issue number, as libs/ and tools/ are: every one, since each was trimmed to the
 * why (STYLE habit 15). A new service joins the list, which a test below holds equal to the services of the repository.
 */
const SERVICES_CHECKED: readonly string[] = ["boards", "delivery", "gateway", "keys", "notifications", "tasks", "webhooks"];

const checked = () => [...sourcesOf("libs"), ...sourcesOf("tools"), ...SERVICES_CHECKED.flatMap((s) => sourcesOf(join("services", s)))];

/** Every comment as the TypeScript compiler reads the file: the trivia before each token and after each node. */
function compilerComments(src: string): { pos: number; end: number }[] {
  const file = ts.createSourceFile("x.ts", src, ts.ScriptTarget.Latest, true);
  const found = new Map<number, number>();
  const visit = (node: ts.Node): void => {
    for (const r of ts.getLeadingCommentRanges(src, node.pos) ?? []) found.set(r.pos, r.end);
    for (const r of ts.getTrailingCommentRanges(src, node.end) ?? []) found.set(r.pos, r.end);
    for (const child of node.getChildren(file)) visit(child);
  };
  visit(file);
  return [...found].map(([pos, end]) => ({ pos, end })).sort((a, b) => a.pos - b.pos);
}

describe("source comments", () => {
  it("when a comment in libs/, tools/ or a checked service cites an issue number, then the check names it (comments say why, never which issue)", () => {
    const files = checked();
    expect(files.length).toBeGreaterThan(90);
    const cites = files.flatMap((f) => citesOf(f, readFileSync(f, "utf8")));
    expect(cites).toEqual([]);
  });

  it("when the services checked are listed, then they are exactly the services of the repository", () => {
    const services = new Set(sourcesOf("services").map((f) => f.slice(join(root, "services").length + 1).split(/[\\/]/)[0]));
    expect([...SERVICES_CHECKED].sort()).toEqual([...services].sort());
  });

  it("when a comment cites an issue in any of its forms, then the pattern finds it, and not a number that is no issue", () => {
    for (const cite of ["Additive (issue 16): the series", "see issue 12", "issues 12 and 16", "(issue #9)", "Issue 16 (decision 0021)", "fixed in #12"])
      expect(ISSUE_CITE.test(cite), cite).toBe(true);
    for (const plain of ["decision 0021", "DESIGN.md section 20", "ctx.addIssue({ code })", "porsager/postgres#1189", "&#12;", "spec 2.4"])
      expect(ISSUE_CITE.test(plain), plain).toBe(false);
  });

  it("when text that looks like a comment sits in a string, a template or a regular expression, then it is not read as one", () => {
    const src = [
      'const a = "// issue 1";',
      // A template inside a template's placeholder, written without a placeholder in this file's own strings.
      "const b = `-- issue 2 $" + "{`/* issue 3 */`} /* issue 4 */`;",
      "const c = /\\/\\/ issue 5/.test(a) ? 1 / 2 : 3; // the one comment",
      "const sql = `select 1 -- issue 6`;",
    ].join("\n");
    expect(commentsOf(src).map((c) => src.slice(c.pos, c.end))).toEqual(["// the one comment"]);
    expect(citesOf(join(root, "x.ts"), src)).toEqual([]);
  });

  it("when the statistics script reads a source file of libs/, services/ or tools/, then it finds exactly the comments the TypeScript compiler finds", () => {
    const files = [...sourcesOf("libs"), ...sourcesOf("services"), ...sourcesOf("tools")];
    const differ = files.filter((f) => {
      const src = readFileSync(f, "utf8");
      return JSON.stringify(commentsOf(src)) !== JSON.stringify(compilerComments(src));
    });
    expect(differ).toEqual([]);
  });
});
