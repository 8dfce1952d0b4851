import type { CallResult, SignedRequest, webhookAttemptsRpc } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import type { RpcClient } from "@tasksvc/nats";

export interface DeliveryResources {
  webhooks: RpcClient<typeof webhookAttemptsRpc>;
  send(request: SignedRequest): Promise<CallResult>;
  log: Logger;
  now(): Date;
}
