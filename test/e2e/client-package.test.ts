import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { e2eContext, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The packed client, installed the way a user outside this repository installs it: `npm pack`,
// then `npm install <tarball>` into an empty project (openapi-fetch and p-retry from the npm
// registry), and a plain Node script against the running stack.
const { stack, f } = e2eContext();
const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

/** This environment without npm's own variables: under `npx vitest` they point npm at this repository. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "INIT_CWD"));
  return { ...env, ...extra };
}

async function sh(cmd: string, args: string[], cwd: string, env = cleanEnv()): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { cwd, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} failed: ${err.message}\n${err.stdout ?? ""}\n${err.stderr ?? ""}`);
  }
}

const script = `
import { createClient, unwrap } from "@tasksvc/client";

const api = createClient({ baseUrl: process.env.TASKSVC_URL, token: process.env.TASKSVC_KEY });
const created = unwrap(await api.POST("/v1/tasks", { body: { title: "From the packed client", priority: "HIGH" } }));
const listed = [];
for await (const task of api.pages("/v1/tasks")) listed.push({ id: task.id, title: task.title });
console.log(JSON.stringify({ created: { id: created.id, title: created.title, priority: created.priority }, listed }));
`;

describe("@tasksvc/client as a package", () => {
  it("when the client is packed and installed into an empty project, then a Node script there creates a task and lists it against the stack", async () => {
    const t = await f.tenant();
    const packDir = mkdtempSync(join(tmpdir(), "tasksvc-client-pack-"));
    const project = mkdtempSync(join(tmpdir(), "tasksvc-client-user-"));
    try {
      const packed = JSON.parse(await sh("npm", ["pack", "-w", "libs/client", "--pack-destination", packDir, "--json"], root)) as Array<{
        filename: string;
        files: Array<{ path: string }>;
      }>;
      const tarball = join(packDir, packed[0]?.filename ?? "");
      expect(existsSync(tarball), tarball).toBe(true);
      const packedFiles = packed[0]?.files.map((x) => x.path) ?? [];
      expect(packedFiles).toEqual(expect.arrayContaining(["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts", "dist/schema.d.ts"]));
      expect(packedFiles.filter((p) => p.endsWith(".tsbuildinfo"))).toEqual([]);

      await sh("npm", ["init", "-y"], project);
      // --prefix as well as the directory: npm must never write into this repository instead.
      await sh("npm", ["pkg", "set", "type=module", "--prefix", project], project);
      await sh("npm", ["install", tarball, "--no-audit", "--no-fund", "--prefix", project], project);

      // Nothing from this repository comes along: the package's dependencies are all published.
      const installed = join(project, "node_modules/@tasksvc/client");
      const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as {
        dependencies: Record<string, string>;
        exports: { ".": { types: string; default: string } };
        types: string;
      };
      expect(Object.keys(manifest.dependencies).sort()).toEqual(["eventsource-parser", "openapi-fetch", "p-retry"]);
      expect(readdirSync(join(project, "node_modules/@tasksvc"))).toEqual(["client"]);
      expect(manifest.exports["."].types).toBe("./dist/index.d.ts");
      expect(manifest.types).toBe("./dist/index.d.ts");
      // The types are in the package, and they import nothing but the package's dependencies.
      const dist = join(installed, "dist");
      for (const file of readdirSync(dist).filter((n) => n.endsWith(".js") || n.endsWith(".d.ts"))) {
        // Comments left out: a doc comment's example ("from": "TODO") is not an import.
        const code = readFileSync(join(dist, file), "utf8")
          .replace(/\/\*[\s\S]*?\*\//g, "")
          .replace(/^\s*\/\/.*$/gm, "");
        const specifiers = [...code.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1] as string);
        for (const s of specifiers) expect(s.startsWith("./") || s in manifest.dependencies, `${file} imports ${s}`).toBe(true);
      }
      expect(readFileSync(join(dist, "index.d.ts"), "utf8")).toContain('from "./schema.js"');
      expect(readFileSync(join(dist, "schema.d.ts"), "utf8")).toContain('"/v1/tasks"');
      // The README that comes with it says how to install it, and how it retries.
      const readme = readFileSync(join(installed, "README.md"), "utf8");
      for (const said of ["npm pack -w libs/client", "npm install /path/to/tasksvc-client-", "Retry-After", "maxRetryAfterMs"]) expect(readme).toContain(said);

      writeFileSync(join(project, "run.mjs"), script);
      const out = await sh(process.execPath, ["run.mjs"], project, cleanEnv({ TASKSVC_URL: gatewayUrl(stack), TASKSVC_KEY: t.apiKey }));
      const result = JSON.parse(out) as { created: { id: string; title: string; priority: string }; listed: Array<{ id: string; title: string }> };
      expect(result.created).toMatchObject({ title: "From the packed client", priority: "HIGH" });
      expect(result.created.id).toMatch(/^T-\d+$/);
      expect(result.listed).toEqual([{ id: result.created.id, title: "From the packed client" }]);
    } finally {
      rmSync(packDir, { recursive: true, force: true });
      rmSync(project, { recursive: true, force: true });
    }
  }, 240_000);
});
