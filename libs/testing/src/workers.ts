import { type ChildProcess, spawn } from "node:child_process";
import type { StackInfo } from "./stack.js";

/** Processes, as production runs them, so a test can run several or kill one mid-call. */
export function deliveryWorkers(stack: Pick<StackInfo, "natsUrl" | "namespace">, settings: Record<string, string>, inherited: NodeJS.ProcessEnv) {
  const workers = new Set<ChildProcess>();

  async function kill(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  return {
    start(): ChildProcess {
      const child = spawn(process.execPath, ["services/delivery/dist/main.js"], {
        env: { ...inherited, ...settings, NATS_URL: stack.natsUrl, NATS_NAMESPACE: stack.namespace, LOG_LEVEL: "warn", OPS_PORT: "0" },
        stdio: ["ignore", "ignore", "inherit"],
      });
      workers.add(child);
      child.on("exit", () => workers.delete(child));
      return child;
    },
    kill,
    async killAll(): Promise<void> {
      await Promise.all([...workers].map(kill));
    },
  };
}
