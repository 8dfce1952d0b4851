import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const dist = fileURLToPath(new URL("../dist/index.js", import.meta.url));

/**
 * A process whose start says "ready" and then, before start resolves, is signalled: the signal
 * arrives in the window where no listener used to exist. `holdMs` keeps start running after the
 * line, so the signal always lands in that window.
 */
function runSignalledAtReady(holdMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const script = `
    const { runMain } = await import(${JSON.stringify(dist)});
    await runMain("probe", async () => {
      process.stdout.write("probe ready\\n");
      await new Promise((r) => setTimeout(r, ${holdMs}));
      return { stop: async () => { process.stdout.write("probe stopped\\n"); } };
    });`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script]);
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("probe ready") && !child.killed) child.kill("SIGTERM");
    });
    child.on("exit", (code, signal) => resolve({ code, signal, out }));
  });
}

describe("runMain and signals", () => {
  it("when SIGTERM arrives while start is still finishing (after its ready line), then the process stops gracefully once started and exits 0", async () => {
    const r = await runSignalledAtReady(300);
    expect(r, r.out).toEqual({ code: 0, signal: null, out: "probe ready\nprobe stopped\n" });
  });
});
