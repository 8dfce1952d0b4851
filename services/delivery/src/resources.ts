import type { CallResult, SignedRequest, webhookAttemptsRpc } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import type { RpcClient } from "@tasksvc/nats";

/**
 * What the delivery service's parts (the worker, the synchronous calls) run on: each is a function
 * of this one object, plus settings only it reads.
 */
export interface DeliveryResources {
  /** The webhooks service's attempt operations: start, record, defer. */
  webhooks: RpcClient<typeof webhookAttemptsRpc>;
  /** One signed request through the egress guard; never rejects. */
  send(request: SignedRequest): Promise<CallResult>;
  log: Logger;
  now(): Date;
}
