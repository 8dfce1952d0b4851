import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

// The S3 client, the MCP SDK and the tracing SDK are loaded on first use: most processes never use
// them, and every full collection marks whatever a process has loaded. A child process runs with
// module hooks that refuse those packages; each service's definition must load without them.
const root = fileURLToPath(new URL("../..", import.meta.url));
const refuse = join(root, "test/arch/fixtures/refuse-modules.mjs");
const dist = (path: string) => pathToFileURL(join(root, path)).href;

function run(script: string): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, ["--import", refuse, "--input-type=module", "-e", script], { cwd: root, encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stderr: r.stderr };
}

const services = readdirSync(join(root, "services"));

describe("modules loaded on first use", () => {
  it.each(services)("when the %s service's definition loads, then neither the S3 client, the MCP SDK nor the tracing SDK is loaded", (name) => {
    const r = run(`await import(${JSON.stringify(dist(`services/${name}/dist/service.js`))});`);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });

  it("when an S3 store is opened, then the S3 client is loaded (the hooks see it)", () => {
    const r = run(
      `const m = await import(${JSON.stringify(dist("libs/blobs/dist/index.js"))});` +
        `await m.s3BlobStore({ kind: "s3", bucket: "b", endpoint: undefined, region: "us-east-1", forcePathStyle: false });`,
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("loaded before its first use: @aws-sdk/client-s3");
  });

  it("when the MCP protocol is built, then the MCP SDK is loaded (the hooks see it)", () => {
    const r = run(`await import(${JSON.stringify(dist("services/gateway/dist/mcp/protocol.js"))});`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("loaded before its first use: @modelcontextprotocol/sdk");
  });

  it("when tracing starts, then the tracing SDK is loaded (the hooks see it)", () => {
    const r = run(
      `const m = await import(${JSON.stringify(dist("libs/telemetry/dist/index.js"))});` +
        `await m.initTracing({ serviceName: "test", endpoint: "http://127.0.0.1:1" });`,
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("loaded before its first use: @opentelemetry/");
  });
});
