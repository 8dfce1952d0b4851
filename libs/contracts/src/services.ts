import { boardsRpc } from "./boards.js";
import { keysRpc } from "./keys.js";
import { notificationsRpc } from "./notifications.js";
import type { RpcCatalog } from "./rpc.js";
import { tasksRpc } from "./tasks-rpc.js";
import { webhooksRpc } from "./webhooks.js";

export interface ServiceEntry {
  /** services/<name>, `@tasksvc/<name>`, whose index exports `service`. */
  name: string;
  rpc?: RpcCatalog;
  /** Two where races matter. */
  testReplicas: number;
  /** Distinct per service, so that `make run` fits on one host. */
  opsPort?: number;
}

/** A new service is a folder plus one line here. In start order: the gateway last, so its first requests find every service up. */
export const SERVICES = [
  { name: keysRpc.service, rpc: keysRpc, testReplicas: 2, opsPort: 9101 },
  { name: tasksRpc.service, rpc: tasksRpc, testReplicas: 2, opsPort: 9102 },
  { name: boardsRpc.service, rpc: boardsRpc, testReplicas: 1, opsPort: 9103 },
  { name: webhooksRpc.service, rpc: webhooksRpc, testReplicas: 2, opsPort: 9104 },
  // One in tests: the shared Postgres has few connections to spare; the fault suite runs more.
  { name: notificationsRpc.service, rpc: notificationsRpc, testReplicas: 1, opsPort: 9107 },
  // The only process that makes outbound HTTP calls.
  { name: "delivery", testReplicas: 1, opsPort: 9105 },
  { name: "gateway", testReplicas: 2, opsPort: 9106 },
] as const satisfies readonly ServiceEntry[];

/**
 * The Node flags every service process runs with, wherever it is started (the image, compose,
 * Kubernetes, `make run`, the bench). V8's memory reducer shrinks an idle process's heap limit
 * to its live size, so the first seconds of load after a quiet spell run a full collection every
 * second or two, each a pause and a core's worth of marking: a service's heap is bounded by its
 * own caches, and holding on to it costs less than those pauses. For the same reason the old
 * generation may grow to twice what a full collection left before the next one starts: V8's own
 * factor for a process that promotes slowly is 1.1, a full collection every few megabytes.
 */
export const SERVICE_NODE_FLAGS = ["--no-memory-reducer", "--heap-growing-percent=100"] as const;

export type ServiceName = (typeof SERVICES)[number]["name"];

type RpcEntry = Extract<(typeof SERVICES)[number], { rpc: RpcCatalog }>;
export type RpcServiceName = RpcEntry["name"];
export type RpcCatalogOf<N extends RpcServiceName> = Extract<RpcEntry, { name: N }>["rpc"];
