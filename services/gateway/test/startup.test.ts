import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { ensureDatabase } from "@tasksvc/db";
import { dropDatabase, dropNamespace, portOf } from "@tasksvc/testing";
import { describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const entry = (svc: string) => fileURLToPath(new URL(`../../${svc}/dist/main.js`, import.meta.url));

/** Starts a built service with the given settings and collects what it prints until it exits. */
function run(svc: string, env: Record<string, string>, timeoutMs = 15_000): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry(svc)], { env: { PATH: process.env["PATH"] ?? "", LOG_LEVEL: "silent", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, stdout });
    });
  });
}

/** Starts a built service and stops it (SIGTERM) once it says it is ready; answers its exit code. */
function runUntilReady(svc: string, env: Record<string, string>, timeoutMs = 30_000): Promise<{ code: number | null; ready: boolean; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry(svc)], { env: { PATH: process.env["PATH"] ?? "", LOG_LEVEL: "info", ...env } });
    let ready = false;
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      if (!ready && d.toString().includes(`${svc} service ready`)) {
        ready = true;
        child.kill("SIGTERM");
      }
    });
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, ready, stderr });
    });
  });
}

const base = () => ({ DATABASE_URL: stack.databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: `${stack.namespace}_startup` });
const oneLine = (s: string) => s.trim().split("\n").length === 1 && !/\n\s+at /.test(s);

describe("start-up failures are one clear line naming the setting", () => {
  it("when Postgres is unreachable, then the gateway names DATABASE_URL", async () => {
    const r = await run("gateway", { ...base(), DATABASE_URL: "postgres://postgres@127.0.0.1:1/x", PORT: "0" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("DATABASE_URL");
    expect(oneLine(r.stderr), r.stderr).toBe(true);
  });

  it("when Postgres is unreachable, then the keys service names DATABASE_URL", async () => {
    const r = await run("keys", { ...base(), DATABASE_URL: "postgres://postgres@127.0.0.1:1/x" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("DATABASE_URL");
    expect(oneLine(r.stderr), r.stderr).toBe(true);
  });

  it("when NATS is unreachable, then it names NATS_URL", async () => {
    const r = await run("keys", { ...base(), NATS_URL: "nats://127.0.0.1:1" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("NATS_URL");
    expect(oneLine(r.stderr), r.stderr).toBe(true);
  });

  it("when the port is taken, then the gateway names PORT", async () => {
    const blocker = createServer();
    await new Promise<void>((res) => blocker.listen(0, "0.0.0.0", () => res()));
    const port = portOf(blocker);
    try {
      const r = await run("gateway", { ...base(), PORT: String(port) });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`PORT ${port}`);
      expect(oneLine(r.stderr), r.stderr).toBe(true);
    } finally {
      blocker.close();
    }
  });

  it("when a namespace's keys service runs on one database, then one started in that namespace on another database exits 1 with one line naming both and the fix; on the same database it starts", async () => {
    const namespace = `${stack.namespace}_own${randomBytes(3).toString("hex")}`;
    const other = new URL(stack.databaseUrl);
    other.pathname = `${other.pathname}_other`;
    await ensureDatabase(other.toString());
    try {
      const first = await runUntilReady("keys", { ...base(), NATS_NAMESPACE: namespace });
      expect(first, first.stderr).toEqual(expect.objectContaining({ ready: true, code: 0 }));
      const r = await run("keys", { ...base(), NATS_NAMESPACE: namespace, DATABASE_URL: other.toString() });
      expect(r.code).toBe(1);
      const name = (u: string) => decodeURIComponent(new URL(u).pathname.slice(1));
      expect(r.stderr).toContain(`NATS_NAMESPACE=${namespace} belongs to another database`);
      expect(r.stderr).toContain(`database "${name(stack.databaseUrl)}"`);
      expect(r.stderr).toContain(`database "${name(other.toString())}"`);
      expect(r.stderr).toContain(`nats stream purge ${namespace}_owner --subject ${namespace}.owner.keys --force`);
      expect(oneLine(r.stderr), r.stderr).toBe(true);
      // The namespace's own database again (a restart, a replica): it starts as before.
      const again = await runUntilReady("keys", { ...base(), NATS_NAMESPACE: namespace });
      expect(again, again.stderr).toEqual(expect.objectContaining({ ready: true, code: 0 }));
    } finally {
      await dropNamespace(stack.natsUrl, namespace);
      await dropDatabase(other.toString());
    }
  }, 60_000);

  it("when a setting has a bad value, then the process names it and exits 1", async () => {
    const r = await run("gateway", { ...base(), LOG_LEVEL: "loud", RPC_TIMEOUT_MS: "soon" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("LOG_LEVEL");
    expect(r.stderr).toContain("RPC_TIMEOUT_MS");
  });
});
