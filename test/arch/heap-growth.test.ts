import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { SERVICE_NODE_FLAGS } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/heap-growth.mjs", import.meta.url));
const run = promisify(execFile);

interface Growth {
  base_mb: number;
  growth_mb: number;
  collected: boolean;
}

/** How far a process's heap grew after one full collection before V8 started the next by itself. */
async function growth(flags: readonly string[]): Promise<Growth> {
  const { stdout } = await run(process.execPath, ["--expose-gc", ...flags, FIXTURE], { env: { ...process.env, LIVE_MB: "48" } });
  const line = /^RESULT (.+)$/m.exec(stdout);
  if (!line?.[1]) throw new Error(`the fixture printed no result:\n${stdout.slice(-2000)}`);
  return JSON.parse(line[1]) as Growth;
}

// A service promotes a megabyte or two a second, for which V8 lets the old generation grow by 10%
// (or 8 MB) before the next full collection, and a full collection every few megabytes made the
// page's tail. The services' flags fix the factor at 2, whatever the process's rate: this fixture
// promotes fast, for which V8 would choose 4, so without the flag it grows about four times as far.
describe("the services' Node flags", () => {
  it("when a process with them keeps more objects after a full collection, then the next starts once the heap has grown by about its live size", async () => {
    const g = await growth(SERVICE_NODE_FLAGS);
    expect(g.collected).toBe(true);
    expect(g.growth_mb, `grew ${g.growth_mb.toFixed(1)} MB over ${g.base_mb.toFixed(1)} MB live`).toBeGreaterThan(0.5 * g.base_mb);
    expect(g.growth_mb, `grew ${g.growth_mb.toFixed(1)} MB over ${g.base_mb.toFixed(1)} MB live`).toBeLessThan(2.4 * g.base_mb);
  });

  it("when the same process runs without the growing flag, then V8 chooses its own factor and the heap grows further (the control)", async () => {
    const g = await growth(SERVICE_NODE_FLAGS.filter((f) => !f.startsWith("--heap-growing-percent")));
    // Measured on Node 20: about four times the live size. If a later V8 chooses otherwise, this
    // fails, and the first case's bounds no longer show that the flag is what sets them.
    expect(g.growth_mb, `grew ${g.growth_mb.toFixed(1)} MB over ${g.base_mb.toFixed(1)} MB live, on Node ${process.versions.node}`).toBeGreaterThan(
      2.8 * g.base_mb,
    );
  });
});
