import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ERROR_CODES } from "@tasksvc/contracts";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const packages = ["libs", "services", "tools"].flatMap((d) => readdirSync(join(root, d)).map((p) => join(root, d, p)));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

/** Every module a file imports or re-exports, as TypeScript's own pre-processor reads them (not a regex). */
const importsOf = (file: string) => ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map((f) => f.fileName);
const pkgName = (spec: string) => (spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : (spec.split("/")[0] as string));

/**
 * STYLE.md "What may import what". jose also serves the keys service's development issuer; the
 * RRULE parser is the tasks service's (contracts are zod schemas only).
 */
const SERVICES = readdirSync(join(root, "services")).map((d) => `@tasksvc/${d}`);

const ALLOWED_ONLY_IN: Record<string, string[]> = {
  fastify: ["services/gateway"],
  jose: ["services/gateway", "services/keys"],
  rrule: ["services/tasks"],
};

/**
 * The libraries' one-way graph (STYLE.md): contracts ← errors ← db / nats; config and logger
 * stand alone; secrets (random material, the API-key hash, sealing at rest) depends on nothing
 * of ours; db takes its ids from secrets; outbound (libs/outbound: signing, egress) reads its
 * settings through config and its sealing key through secrets; runtime (how every service starts and stops) sits on all of those;
 * testing (dev only) on runtime. No library imports a service: the test stack loads them by name.
 */
const LIB_DEPS: Record<string, string[]> = {
  "libs/contracts": [],
  "libs/config": [],
  "libs/logger": [],
  "libs/errors": ["@tasksvc/contracts"],
  "libs/telemetry": [],
  "libs/client": [],
  "libs/secrets": [],
  "libs/db": ["@tasksvc/config", "@tasksvc/contracts", "@tasksvc/errors", "@tasksvc/logger", "@tasksvc/secrets", "@tasksvc/telemetry"],
  "libs/nats": ["@tasksvc/config", "@tasksvc/contracts", "@tasksvc/errors", "@tasksvc/logger", "@tasksvc/telemetry"],
  "libs/outbound": ["@tasksvc/config", "@tasksvc/secrets"],
  "libs/blobs": [],
  "libs/runtime": ["@tasksvc/config", "@tasksvc/contracts", "@tasksvc/db", "@tasksvc/logger", "@tasksvc/nats", "@tasksvc/telemetry"],
  "libs/testing": ["@tasksvc/config", "@tasksvc/contracts", "@tasksvc/db", "@tasksvc/logger", "@tasksvc/nats", "@tasksvc/runtime"],
};
/** Packages that never ship: their devDependencies count as declared (pruned from the image). */
const DEV_ONLY = ["libs/testing"];

describe("package boundaries", () => {
  for (const pkg of packages) {
    const name = relative(root, pkg);
    const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
      exports?: Record<string, unknown>;
    };
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...(DEV_ONLY.includes(name) ? Object.keys(manifest.devDependencies ?? {}) : [])]);

    it(`when ${name} is packaged, then it exposes only "."`, () => {
      expect(Object.keys(manifest.exports ?? {})).toEqual(["."]);
    });

    if (!DEV_ONLY.includes(name)) {
      it(`when ${name} ships, then none of its dependencies is test tooling (kept out of the image)`, () => {
        for (const dep of ["@tasksvc/testing", "testcontainers", "vitest"]) expect(declared.has(dep), `${name} depends on ${dep}`).toBe(false);
      });
    }

    it(`when ${name}/src imports a package, then it declares it and the edge is allowed`, () => {
      for (const file of sources(join(pkg, "src"))) {
        for (const spec of importsOf(file)) {
          if (spec.startsWith(".") || spec.startsWith("node:")) continue;
          const dep = pkgName(spec);
          expect(declared.has(dep), `${relative(root, file)} imports ${dep}, undeclared in ${name}/package.json`).toBe(true);
          if (name.startsWith("services/") && dep.startsWith("@tasksvc/")) {
            expect(dep.startsWith("@tasksvc/") && !SERVICES.includes(dep), `${name} imports another service (${dep})`).toBe(true);
          }
          if (name.startsWith("libs/")) {
            expect(SERVICES.includes(dep), `${name} imports a service`).toBe(false);
            if (dep.startsWith("@tasksvc/"))
              expect(LIB_DEPS[name] ?? [], `${name} may not import ${dep} (the import rules: scripts/check-boundaries.mjs)`).toContain(dep);
          }
          const only = ALLOWED_ONLY_IN[dep];
          if (only) expect(only, `${relative(root, file)} may not import ${dep}`).toContain(name);
        }
      }
    });
  }

  it("when the code reads the environment, then it is only through the config lib or a process entry", () => {
    for (const pkg of packages) {
      for (const file of sources(join(pkg, "src"))) {
        const rel = relative(root, file);
        const text = readFileSync(file, "utf8");
        if (/process\.env\b/.test(text)) {
          expect(
            // libs/logger reads the terminal conventions NO_COLOR and FORCE_COLOR, which are not
            // settings of ours but of whoever runs the process (pretty logs, issue 14).
            ["libs/config/src/index.ts", "libs/db/src/pool.ts", "libs/logger/src/index.ts", "libs/testing/src/stack.ts", "libs/testing/src/global-setup.ts"],
            `${rel} reads process.env`,
          ).toContain(rel);
        }
      }
    }
  });
});

describe("error catalog", () => {
  it("when a code exists, then docs/errors.md has a row for it, and no row is stale", () => {
    const doc = readFileSync(join(root, "docs/errors.md"), "utf8");
    const rows = [...doc.matchAll(/^\|\s*(\d{3})\s*\|\s*`([a-z_]+)`/gm)].map((m) => m[2]);
    expect([...rows].sort()).toEqual([...ERROR_CODES].sort());
  });
});
