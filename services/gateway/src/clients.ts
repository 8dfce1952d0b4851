import { SERVICES, type RpcCatalogOf, type RpcServiceName } from "@tasksvc/contracts";
import { client, type ClientOptions, type NatsConnection, type RpcClient } from "@tasksvc/nats";

export type Clients = { [N in RpcServiceName]: RpcClient<RpcCatalogOf<N>> };

/** A new service needs no line here. */
export function createClients(nc: NatsConnection, opts: ClientOptions): Clients {
  const entries = SERVICES.flatMap((s) => ("rpc" in s ? [[s.name, client(nc, s.rpc, opts)] as const] : []));
  // Object.fromEntries cannot keep each name's own catalog type; the registry pairs every name with its catalog.
  return Object.fromEntries(entries) as Clients;
}
