#!/usr/bin/env node
// Import boundaries (STYLE.md "What may import what", Habit 2), checked on the syntax tree that the
// TypeScript compiler parses, not on text: a specifier inside a comment or a string is not an
// import, and `import type`, `export … from`, `import()`, `require()`, `import x = require()` and
// `typeof import("…")` all are.
//
//   node scripts/check-boundaries.mjs [--root DIR]   prints "file:line: rule: detail", exits 1 on any
//   node scripts/check-boundaries.mjs --self-test    checks a fixture tree with a known answer
//
// What is checked, and why there:
// - Each package's src/ (libs/*, services/*, tools/*) is the shipped dependency graph, so all rules
//   apply to it.
// - Tests (each package's test/, and the root test/) consume packages as a user would: they start
//   the stack, call a service, and may unit-test their own package's internals through relative
//   paths (Habit 11's pure-logic tests). So they get only the rules that keep packages sealed: no
//   relative path into another package, no import below a package's "." entry.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const SOURCE_EXTENSIONS = [".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs"];
const SKIP_DIRS = new Set(["node_modules", "dist", "coverage", "results"]);

/**
 * STYLE: "Libs form a one-way graph: contracts ← errors ← db / nats; config and logger stand alone."
 * Each lib listed may import only the libs listed beside it, so none of them can come to depend
 * on a newer lib; testing (dev only) may import any lib. A lib not listed (one built on top, like
 * runtime) may import any lib: it cannot close a cycle through the listed ones, and `tsc -b` refuses
 * a cycle of project references among the others.
 */
const LIB_GRAPH = {
  config: [],
  logger: [],
  contracts: [],
  errors: ["contracts"],
  // libs/telemetry: metrics, health and tracing primitives, below db and nats (which it instruments).
  telemetry: [],
  // libs/client (@tasksvc/client): published for users; it knows the HTTP API only.
  client: [],
  // libs/secrets: random material, the API-key hash, sealing at rest; nothing of ours below it.
  secrets: [],
  db: ["contracts", "errors", "config", "logger", "telemetry", "secrets"],
  nats: ["contracts", "errors", "config", "logger", "telemetry"],
  // libs/outbound (@tasksvc/outbound): signing, egress; its settings through config, its sealing key through secrets.
  outbound: ["config", "secrets"],
  testing: "*",
};

/**
 * The one place a computed import() is allowed, and why: the test stack starts every service of
 * the registry (SERVICES) by loading `@tasksvc/<name>`, so that a new service needs only its
 * registry line and the testing library depends on no service. libs/testing is dev only (never in
 * the image). Anywhere else a computed specifier is reported, so it is not a way around the rules.
 */
const COMPUTED_IMPORT_ALLOWED = new Set(["libs/testing/src/stack.ts"]);

/** STYLE layout: "src/domain/ rules; imports neither nats nor fastify". */
const TRANSPORT_PACKAGES = ["@tasksvc/nats", "@nats-io/", "fastify", "@fastify/"];

const toPosix = (p) => p.split(sep).join("/");
const isUnder = (path, dir) => path === dir || path.startsWith(`${dir}/`);

function listDir(dir) {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function sourceFiles(dir) {
  const out = [];
  for (const name of listDir(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (!SKIP_DIRS.has(name)) out.push(...sourceFiles(p));
    } else if (SOURCE_EXTENSIONS.some((e) => name.endsWith(e))) {
      out.push(p);
    }
  }
  return out;
}

/** The workspace packages: name → { kind, short, dir } from each package.json. */
function readPackages(root) {
  const byName = new Map();
  const byDir = new Map();
  for (const kind of ["libs", "services", "tools"]) {
    for (const short of listDir(join(root, kind))) {
      const manifest = join(root, kind, short, "package.json");
      if (!existsSync(manifest)) continue;
      const name = JSON.parse(readFileSync(manifest, "utf8")).name;
      const pkg = { name, kind, short, dir: `${kind}/${short}` };
      if (typeof name === "string") byName.set(name, pkg);
      byDir.set(pkg.dir, pkg);
    }
  }
  return { byName, byDir };
}

/** Every module specifier in a file, with its line, found by walking the syntax tree. */
export function importsOf(fileName, text) {
  const kind = fileName.endsWith(".mjs") || fileName.endsWith(".js") || fileName.endsWith(".cjs") ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, kind);
  const found = [];
  const add = (node, spec) => found.push({ line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, spec });
  const literal = (n) => n !== undefined && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n));
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && literal(node.moduleSpecifier)) {
      add(node, node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const e = node.moduleReference.expression;
      add(node, literal(e) ? e.text : null);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && literal(node.argument.literal)) {
      add(node, node.argument.literal.text);
    } else if (ts.isCallExpression(node)) {
      const dynamicImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const req = ts.isIdentifier(node.expression) && node.expression.text === "require";
      // A specifier computed at run time cannot be checked; it is reported (null) so it is not a way around the rules.
      if (dynamicImport || req) add(node, literal(node.arguments[0]) ? node.arguments[0].text : null);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Package name of a bare specifier: "@scope/name/x" → "@scope/name", "name/x" → "name". */
const packageOf = (spec) => (spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]);

/** Which layer of a service a file (path relative to the service's src/) is in. */
const layerOf = (pathInSrc) => (isUnder(pathInSrc, "domain") ? "domain" : isUnder(pathInSrc, "repo") ? "repo" : "entry");

/**
 * Checks one file. `owner` is the package the file belongs to (undefined for the root test/),
 * `inSrc` whether it is shipped code (the package's src/) rather than a test.
 */
function checkFile(root, packages, file, owner, inSrc) {
  const rel = toPosix(relative(root, file));
  const violations = [];
  const report = (line, rule, detail) => violations.push({ file: rel, line, rule, detail });

  for (const { line, spec } of importsOf(file, readFileSync(file, "utf8"))) {
    if (spec === null) {
      if (inSrc && !COMPUTED_IMPORT_ALLOWED.has(rel))
        report(line, "unresolvable-import", "import()/require() of a computed specifier cannot be checked; use a string literal");
      continue;
    }
    if (spec.startsWith(".")) {
      const target = toPosix(relative(root, resolve(dirname(file), spec)));
      const targetPkg = [...packages.byDir.values()].find((p) => isUnder(target, p.dir));
      if (owner && targetPkg === owner) {
        if (inSrc && owner.kind === "services") {
          const from = layerOf(rel.slice(`${owner.dir}/src/`.length));
          const to = isUnder(target, `${owner.dir}/src`) ? layerOf(target.slice(`${owner.dir}/src/`.length)) : "entry";
          if (from === "repo" && to === "domain") report(line, "repo-imports-domain", `${spec} (repo is the layer below domain)`);
          if (from === "repo" && to === "entry") report(line, "repo-imports-entry", `${spec} (repo imports only repo files and packages)`);
          if (from === "domain" && to === "entry") report(line, "domain-imports-entry", `${spec} (domain is called by the entry layer, not the reverse)`);
        }
        continue;
      }
      if (targetPkg && inSrc && owner?.kind === "libs" && targetPkg.kind === "services") {
        report(line, "lib-imports-service", `${spec} resolves into ${targetPkg.dir}`);
      } else if (targetPkg && inSrc && owner?.kind === "services" && targetPkg.kind === "services") {
        report(line, "service-imports-service", `${spec} resolves into ${targetPkg.dir}`);
      } else if (targetPkg) {
        report(line, "escapes-package", `${spec} resolves into ${targetPkg.dir}; import "${targetPkg.name}" instead`);
      } else if (owner && !isUnder(target, owner.dir)) {
        report(line, "escapes-package", `${spec} resolves to ${target}, outside ${owner.dir}`);
      }
      continue;
    }
    if (spec.startsWith("node:")) continue;

    const name = packageOf(spec);
    const target = packages.byName.get(name);
    if (target && spec !== name) report(line, "deep-import", `${spec} (each package exposes only ".")`);
    if (!inSrc || !owner) continue;

    if (owner.kind === "services" && layerOf(rel.slice(`${owner.dir}/src/`.length)) === "domain") {
      if (TRANSPORT_PACKAGES.some((t) => (t.endsWith("/") ? spec.startsWith(t) : name === t))) {
        report(line, "domain-imports-transport", `${spec} (domain imports neither nats nor fastify)`);
      }
    }
    if (!target || target === owner) continue;
    if (target.kind === "libs" && target.short === "testing" && owner !== target) {
      report(line, "src-imports-testing", `${spec} (@tasksvc/testing is dev only; import it from tests)`);
      continue;
    }
    if (owner.kind === "libs") {
      if (target.kind === "services") report(line, "lib-imports-service", `${spec} (libraries never import services)`);
      else if (target.kind !== "libs") report(line, "lib-imports-non-lib", `${spec} is a ${target.kind} package`);
      else {
        const allowed = LIB_GRAPH[owner.short];
        if (allowed !== undefined && allowed !== "*" && !allowed.includes(target.short)) {
          report(line, "lib-graph", `${owner.dir} may import only [${allowed.join(", ")}], not ${spec}`);
        }
      }
    } else if (owner.kind === "services") {
      if (target.kind === "services") report(line, "service-imports-service", `${spec} (services never import each other; use RPC or events)`);
      else if (target.kind !== "libs") report(line, "service-imports-non-lib", `${spec} is a ${target.kind} package`);
    } else if (owner.kind === "tools") {
      if (target.kind !== "libs") report(line, "tool-imports-non-lib", `${spec} is a ${target.kind} package (tools import libs only)`);
    }
  }
  return violations;
}

/** The file a relative specifier names among `known`: TypeScript's ESM imports name a `.ts` file by its `.js`. */
function sourceOf(path, known) {
  const swapped = [".ts", ".tsx"].map((e) => path.replace(/\.js$/, e)).concat(path.replace(/\.mjs$/, ".mts"), path.replace(/\.cjs$/, ".cts"));
  const candidates = [path, ...swapped, ...SOURCE_EXTENSIONS.map((e) => path + e), ...SOURCE_EXTENSIONS.map((e) => join(path, `index${e}`))];
  return candidates.find((c) => known.has(c));
}

/**
 * STYLE: "No import circle, not even of types": the relative imports among one package's shipped
 * files (`import type` included) form no cycle, since a type shared both ways belongs in a file of
 * its own. Each cycle is reported once, at the import that closes it.
 */
function cyclesIn(root, files) {
  const known = new Set(files);
  const edges = new Map(
    files.map((f) => [
      f,
      importsOf(f, readFileSync(f, "utf8")).flatMap(({ line, spec }) => {
        const target = spec?.startsWith(".") ? sourceOf(resolve(dirname(f), spec), known) : undefined;
        return target ? [{ line, target }] : [];
      }),
    ]),
  );
  const violations = [];
  const state = new Map();
  const path = [];
  const visit = (f) => {
    state.set(f, "open");
    path.push(f);
    for (const { line, target } of edges.get(f)) {
      if (state.get(target) === "open") {
        const cycle = [...path.slice(path.indexOf(target)), target].map((x) => toPosix(relative(root, x)));
        violations.push({ file: toPosix(relative(root, f)), line, rule: "import-cycle", detail: cycle.join(" -> ") });
      } else if (!state.has(target)) visit(target);
    }
    path.pop();
    state.set(f, "done");
  };
  for (const f of files) if (!state.has(f)) visit(f);
  return violations;
}

export function check(root) {
  const packages = readPackages(root);
  const violations = [];
  for (const pkg of packages.byDir.values()) {
    const shipped = sourceFiles(join(root, pkg.dir, "src"));
    for (const f of shipped) violations.push(...checkFile(root, packages, f, pkg, true));
    violations.push(...cyclesIn(root, shipped));
    for (const f of sourceFiles(join(root, pkg.dir, "test"))) violations.push(...checkFile(root, packages, f, pkg, false));
  }
  for (const f of sourceFiles(join(root, "test"))) violations.push(...checkFile(root, packages, f, undefined, false));
  violations.sort((a, b) => (a.file === b.file ? a.line - b.line || a.rule.localeCompare(b.rule) : a.file < b.file ? -1 : 1));
  return violations;
}

/** A tiny workspace with one violation of each rule (and allowed edges beside them). */
function selfTest() {
  const dir = mkdtempSync(join(tmpdir(), "check-boundaries-"));
  const write = (path, text) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  for (const p of ["libs/contracts", "libs/errors", "libs/nats", "libs/testing", "libs/extra", "services/a", "services/b", "tools/admin"]) {
    write(`${p}/package.json`, JSON.stringify({ name: `@tasksvc/${p.split("/")[1]}` }));
  }
  write(
    "libs/errors/src/index.ts",
    `import { x } from "@tasksvc/contracts";\nimport "@tasksvc/extra";\n// import { y } from "@tasksvc/a";\nconst s = "@tasksvc/b";\n`,
  );
  write("libs/contracts/src/index.ts", `import type { E } from "@tasksvc/errors";\n`);
  write("libs/extra/src/index.ts", `import "@tasksvc/contracts";\nimport "@tasksvc/nats";\n`);
  write("libs/testing/src/stack.ts", `import { startA } from "@tasksvc/a";\nexport type B = typeof import("@tasksvc/b");\nimport "@tasksvc/errors";\n`);
  write("libs/nats/src/index.ts", `const m = await import("../../../services/b/src/main.js");\nconst n = require(name);\n`);
  write(
    "services/a/src/domain/rules.ts",
    `import type { Repo } from "../repo/repo.js";\nimport { cfg } from "../config.js";\nimport { serve } from "@tasksvc/nats";\nimport { connect } from "@nats-io/transport-node";\n`,
  );
  write("services/a/src/repo/repo.ts", `import { rules } from "../domain/rules.js";\nexport { cfg } from "../config.js";\nimport { z } from "zod";\n`);
  write(
    "services/a/src/main.ts",
    `import { b } from "@tasksvc/b";\nimport { t } from "@tasksvc/testing";\nimport { e } from "@tasksvc/errors/src/index.js";\nimport x = require("../../b/src/x.js");\n`,
  );
  write(
    "services/a/test/a.test.ts",
    `import { rules } from "../src/domain/rules.js";\nimport { t } from "@tasksvc/testing";\nimport { b } from "@tasksvc/b";\n`,
  );
  // A library's tests use the dev-only testing library too (eventually()), though it depends on them.
  write("libs/nats/test/consume.test.ts", `import { eventually } from "@tasksvc/testing";\nimport { serve } from "../src/index.js";\n`);
  write("tools/admin/src/main.ts", `import { a } from "@tasksvc/a";\nimport { c } from "@tasksvc/contracts";\n`);
  write("test/e2e/x.test.ts", `import { r } from "../../services/a/src/domain/rules.js";\nimport { t } from "@tasksvc/testing";\n`);
  const expected = [
    "libs/contracts/src/index.ts:1: lib-graph",
    "libs/errors/src/index.ts:2: lib-graph",
    "libs/nats/src/index.ts:1: lib-imports-service",
    "libs/nats/src/index.ts:2: unresolvable-import",
    "libs/testing/src/stack.ts:1: lib-imports-service",
    "libs/testing/src/stack.ts:2: lib-imports-service",
    "services/a/src/domain/rules.ts:2: domain-imports-entry",
    "services/a/src/domain/rules.ts:3: domain-imports-transport",
    "services/a/src/domain/rules.ts:4: domain-imports-transport",
    "services/a/src/main.ts:1: service-imports-service",
    "services/a/src/main.ts:2: src-imports-testing",
    "services/a/src/main.ts:3: deep-import",
    "services/a/src/main.ts:4: service-imports-service",
    "services/a/src/repo/repo.ts:1: repo-imports-domain",
    "services/a/src/repo/repo.ts:2: repo-imports-entry",
    // rules.ts imports a type from repo.ts, which imports rules.ts back.
    "services/a/src/repo/repo.ts:1: import-cycle",
    "test/e2e/x.test.ts:1: escapes-package",
    "tools/admin/src/main.ts:1: tool-imports-non-lib",
  ];
  try {
    const got = check(dir).map((v) => `${v.file}:${v.line}: ${v.rule}`);
    const missing = expected.filter((e) => !got.includes(e));
    const extra = got.filter((g) => !expected.includes(g));
    if (missing.length || extra.length) {
      console.error(`check-boundaries self-test failed\n  missing: ${missing.join("\n           ") || "-"}\n  extra:   ${extra.join("\n           ") || "-"}`);
      return 1;
    }
    console.log(`check-boundaries self-test: ${expected.length} expected violations found, no others`);
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function main(argv) {
  if (argv.includes("--self-test")) return selfTest();
  const i = argv.indexOf("--root");
  const root = i >= 0 && argv[i + 1] ? resolve(argv[i + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const violations = check(root);
  for (const v of violations) console.log(`${v.file}:${v.line}: ${v.rule}: ${v.detail}`);
  if (violations.length) {
    console.error(`check-boundaries: ${violations.length} violation(s) of the import rules (each rule and why: the top of scripts/check-boundaries.mjs)`);
    return 1;
  }
  console.log("check-boundaries: no violations");
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
