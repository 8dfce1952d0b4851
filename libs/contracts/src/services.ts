import { boardsRpc } from "./boards.js";
import { keysRpc } from "./keys.js";
import type { RpcCatalog } from "./rpc.js";
import { tasksRpc } from "./tasks-rpc.js";
import { webhooksRpc } from "./webhooks.js";

/** One service of the system, as everything that starts or calls services sees it. */
export interface ServiceEntry {
  /** Its folder and package: services/<name>, `@tasksvc/<name>`, whose index exports `service`. */
  name: string;
  /** The catalog it serves over NATS (the gateway gets a client of each); the name is its `service`. */
  rpc?: RpcCatalog;
  /** Replicas the test stack starts unless a test says otherwise (two where races matter). */
  testReplicas: number;
  /**
   * Default OPS_PORT (/metrics, /healthz, /readyz), distinct per service so that `make run` fits
   * on one host. The gateway's too: its /metrics is served there only, never on the public PORT.
   */
  opsPort?: number;
}

/**
 * The registry: a new service is a folder plus one line here. Read by scripts/start.mjs (one
 * process each), the test stack (replicas in one process) and the gateway (a client per catalog).
 * Listed in start order: the gateway last, as it forwards to all the others (nothing waits for
 * anything at start, but the first requests then find every service up).
 */
export const SERVICES = [
  { name: keysRpc.service, rpc: keysRpc, testReplicas: 2, opsPort: 9101 },
  { name: tasksRpc.service, rpc: tasksRpc, testReplicas: 2, opsPort: 9102 },
  { name: boardsRpc.service, rpc: boardsRpc, testReplicas: 1, opsPort: 9103 },
  { name: webhooksRpc.service, rpc: webhooksRpc, testReplicas: 2, opsPort: 9104 },
  // The only process that makes outbound HTTP calls; its one operation is the webhooks service's, not the gateway's.
  { name: "delivery", testReplicas: 1, opsPort: 9105 },
  { name: "gateway", testReplicas: 2, opsPort: 9106 },
] as const satisfies readonly ServiceEntry[];

export type ServiceName = (typeof SERVICES)[number]["name"];

type RpcEntry = Extract<(typeof SERVICES)[number], { rpc: RpcCatalog }>;
/** The services that serve a catalog. */
export type RpcServiceName = RpcEntry["name"];
/** The catalog a service serves, by name: `RpcCatalogOf<"tasks">` is `typeof tasksRpc`. */
export type RpcCatalogOf<N extends RpcServiceName> = Extract<RpcEntry, { name: N }>["rpc"];
