import { randomBytes } from "node:crypto";
import { parseConfig } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { startService } from "@tasksvc/runtime";
import type { ServiceName } from "@tasksvc/contracts";
import type { StackInfo } from "./stack.js";
import { loadService } from "./stack.js";

/** For a setting under test (BODY_TIMEOUT, PUBLIC_BASE_URL …). */
export async function startExtraGateway(stack: StackInfo, settings: Record<string, string>): Promise<{ url: URL; stop(): Promise<void> }> {
  const def = await loadService("gateway");
  const env = {
    DATABASE_URL: stack.databaseUrl,
    NATS_URL: stack.natsUrl,
    NATS_NAMESPACE: stack.namespace,
    PORT: "0",
    OPS_PORT: "0",
    RPC_CHECK_REPLIES: "true",
    ...settings,
  };
  const running = await startService(def, parseConfig(def.config, env), createLogger({ service: "gateway", level: "silent" }));
  return { url: new URL("url" in running && typeof running.url === "string" ? running.url : ""), stop: () => running.stop() };
}

/**
 * Replicas of one service beside a stack started with none of it, with settings of their own (a
 * short DUE_TICK …), so that a test can also stop them and start new ones as a restart does.
 */
export async function startExtraReplicas(
  stack: StackInfo,
  name: ServiceName,
  n: number,
  settings: Record<string, string>,
): Promise<Array<{ stop(): Promise<void>; readonly opsPort: number | undefined }>> {
  const def = await loadService(name);
  const env = {
    DATABASE_URL: stack.databaseUrl,
    NATS_URL: stack.natsUrl,
    NATS_NAMESPACE: stack.namespace,
    OPS_PORT: "0",
    DATABASE_POOL_SIZE: "5",
    ...settings,
  };
  const log = createLogger({ service: name, level: "silent" });
  return Promise.all(Array.from({ length: n }, () => startService(def, parseConfig(def.config, env, { service: name }), log)));
}

/** Words that seldom repeat, so that full-text work on it is real. */
export function randomWords(n: number): string {
  const out: string[] = [];
  let len = 0;
  while (len < n) {
    const w = randomBytes(4).toString("hex");
    out.push(w);
    len += w.length + 1;
  }
  return out.join(" ").slice(0, n);
}
