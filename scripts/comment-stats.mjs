#!/usr/bin/env node
// How much of the hand-written source is comment, and how many comments cite an issue number
// (STYLE habit 15 asks for 5-10% and none). Reads .ts files under libs/, services/ and tools/,
// leaving out dist, node_modules, tests and generated files.
//
//   node scripts/comment-stats.mjs          prints one row per package and a total
//   node scripts/comment-stats.mjs --cites  also prints each comment line that cites an issue
//
// A line counts as comment when it holds comment text and no code; a code line with a trailing
// comment counts as code. Comments are found by a small lexer (no dependency), which knows strings,
// templates and regular expressions, so `//` or `/*` inside them is not a comment;
// test/arch/comments.test.ts holds it equal to the TypeScript compiler's reading of every file.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
export const AREAS = ["libs", "services", "tools"];
/** Generated, not written by hand. */
export const GENERATED = new Set(["libs/client/src/schema.ts", "libs/client/src/filter-ops.ts", "libs/client/src/idempotent.ts"]);
const SKIP_DIRS = new Set(["node_modules", "dist", "test", "coverage"]);

/** "issue 12", "issues 12 and 16", "(issue #16)", "#12". */
export const ISSUE_CITE = /\bissues?\s*#?\d+|(?:^|[^\w&])#\d+\b/i;

// After these keywords a `/` starts a regular expression; after any other word it divides.
const REGEX_AFTER_WORD = new Set(["return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof", "yield", "await"]);

/**
 * The comments of a TypeScript source, each as its character range.
 * @param {string} src
 * @returns {{ pos: number, end: number }[]}
 */
export function commentsOf(src) {
  const out = [];
  /** Brace depth at which each open `${` of a template returns to the template's text. */
  const templates = [];
  let depth = 0;
  let regexOk = true;
  let i = 0;
  const n = src.length;
  const skipString = (q) => {
    for (i++; i < n && src[i] !== q; i++) if (src[i] === "\\") i++;
    i++;
  };
  /** From inside a template's text to past its end or its next `${`. */
  const skipTemplateText = () => {
    for (; i < n; i++) {
      const c = src[i];
      if (c === "\\") i++;
      else if (c === "`") {
        i++;
        return;
      } else if (c === "$" && src[i + 1] === "{") {
        i += 2;
        templates.push(depth);
        depth++;
        return;
      }
    }
  };
  while (i < n) {
    const c = src[i];
    const d = src[i + 1];
    if (c === "/" && d === "/") {
      const start = i;
      while (i < n && src[i] !== "\n") i++;
      out.push({ pos: start, end: i });
    } else if (c === "/" && d === "*") {
      const start = i;
      const close = src.indexOf("*/", i + 2);
      i = close < 0 ? n : close + 2;
      out.push({ pos: start, end: i });
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'") {
      skipString(c);
      regexOk = false;
    } else if (c === "`") {
      i++;
      skipTemplateText();
      regexOk = false;
    } else if (c === "/" && regexOk) {
      let inClass = false;
      for (i++; i < n && src[i] !== "\n"; i++) {
        if (src[i] === "\\") i++;
        else if (src[i] === "[") inClass = true;
        else if (src[i] === "]") inClass = false;
        else if (src[i] === "/" && !inClass) break;
      }
      for (i++; i < n && /[a-z]/i.test(src[i]); i++);
      regexOk = false;
    } else if (/[\w$]/.test(c)) {
      const start = i;
      while (i < n && /[\w$]/.test(src[i])) i++;
      regexOk = REGEX_AFTER_WORD.has(src.slice(start, i));
    } else {
      i++;
      if (c === "{") depth++;
      else if (c === "}") {
        depth--;
        if (templates.length > 0 && templates[templates.length - 1] === depth) {
          templates.pop();
          skipTemplateText();
          regexOk = false;
          continue;
        }
      }
      regexOk = c !== ")" && c !== "]" && c !== "}";
    }
  }
  return out;
}

/**
 * Per line: "comment" (comment text and no code), "code", or "blank"; and each comment's text.
 * @param {string} src
 */
export function linesOf(src) {
  const comments = commentsOf(src);
  const kinds = [];
  const starts = [0];
  for (let i = 0; i < src.length; i++) if (src[i] === "\n") starts.push(i + 1);
  let k = 0;
  for (let line = 0; line < starts.length; line++) {
    const from = starts[line];
    const to = line + 1 < starts.length ? starts[line + 1] - 1 : src.length;
    if (from === to && line === starts.length - 1) break;
    let code = false;
    let comment = false;
    for (let p = from; p < to; p++) {
      while (k < comments.length && comments[k].end <= p) k++;
      const inComment = k < comments.length && comments[k].pos <= p;
      if (inComment) comment = true;
      else if (!/\s/.test(src[p])) code = true;
    }
    kinds.push(code ? "code" : comment ? "comment" : "blank");
  }
  return { kinds, comments: comments.map((c) => ({ ...c, text: src.slice(c.pos, c.end), line: lineAt(starts, c.pos) })) };
}

function lineAt(starts, pos) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/** Each comment line citing an issue, as "path:line: text". */
export function citesOf(file, src) {
  const found = [];
  for (const c of linesOf(src).comments) {
    c.text.split("\n").forEach((text, j) => {
      if (ISSUE_CITE.test(text)) found.push(`${relative(root, file).split(sep).join("/")}:${c.line + j}: ${text.trim()}`);
    });
  }
  return found;
}

/** The hand-written .ts sources of one area ("libs", "services", "tools"), as absolute paths. */
export function sourcesOf(area) {
  const walk = (dir) =>
    readdirSync(dir).flatMap((name) => {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) return SKIP_DIRS.has(name) ? [] : walk(p);
      return p.endsWith(".ts") && !p.endsWith(".test.ts") && !GENERATED.has(relative(root, p).split(sep).join("/")) ? [p] : [];
    });
  return walk(join(root, area));
}

function main() {
  const rows = [];
  const cites = [];
  for (const area of AREAS) {
    for (const pkg of readdirSync(join(root, area)).sort()) {
      if (!statSync(join(root, area, pkg)).isDirectory()) continue;
      const row = { pkg: `${area}/${pkg}`, code: 0, comment: 0, cites: 0 };
      for (const file of sourcesOf(area).filter((f) => f.startsWith(join(root, area, pkg) + sep))) {
        const src = readFileSync(file, "utf8");
        for (const kind of linesOf(src).kinds) if (kind !== "blank") row[kind]++;
        const found = citesOf(file, src);
        row.cites += found.length;
        cites.push(...found);
      }
      if (row.code + row.comment > 0) rows.push(row);
    }
  }
  const pct = (r) => `${((100 * r.comment) / (r.code + r.comment)).toFixed(1)}%`;
  const sum = (pkg, of) => {
    const t = { pkg, code: 0, comment: 0, cites: 0 };
    for (const r of of) {
      t.code += r.code;
      t.comment += r.comment;
      t.cites += r.cites;
    }
    return t;
  };
  const line = (r) => `${r.pkg.padEnd(20)} ${String(r.code).padStart(6)} ${String(r.comment).padStart(8)} ${pct(r).padStart(8)} ${String(r.cites).padStart(6)}`;
  console.log(`${"package".padEnd(20)} ${"code".padStart(6)} ${"comment".padStart(8)} ${"share".padStart(8)} ${"cites".padStart(6)}`);
  for (const r of rows) console.log(line(r));
  for (const area of AREAS) {
    const of = rows.filter((r) => r.pkg.startsWith(`${area}/`));
    if (of.length > 0) console.log(line(sum(`${area}/*`, of)));
  }
  console.log(line(sum("total", rows)));
  if (process.argv.includes("--cites")) for (const c of cites) console.log(c);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
