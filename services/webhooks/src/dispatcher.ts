import { webhookMessages, type DeliveryJob } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { encodeJson, jetstream, sleeper, type NatsConnection } from "@tasksvc/nats";
import type { DispatchService } from "./domain/dispatch.js";

export interface DispatcherOptions {
  dispatch: DispatchService;
  log: Logger;
  /** How often to look for due retries and expired leases when nothing wakes it (default 250 ms). */
  pollMs?: number;
  /** Wakes that come faster (every event fanned out, every report recorded) are served together by the next pass. */
  gapMs?: number;
}

export interface Dispatcher {
  wake(): void;
  stop(): Promise<void>;
}

export function jobPublisher(nc: NatsConnection, namespace: string): (job: DeliveryJob) => Promise<void> {
  const js = jetstream(nc);
  const subject = webhookMessages.deliveryJob.subject(namespace);
  return async (job) => {
    await js.publish(subject, encodeJson(job));
  };
}

export function startDispatcher(o: DispatcherOptions): Dispatcher {
  const pollMs = o.pollMs ?? 250;
  const gapMs = o.gapMs ?? 10;
  let stopping = false;
  let again = true;
  const idle = sleeper();

  const loop = (async () => {
    while (!stopping) {
      if (!again) await idle.sleep(pollMs);
      again = false;
      if (stopping) break;
      try {
        if (await o.dispatch.pass()) again = true;
      } catch (err) {
        o.log.warn({ err }, "dispatch pass failed; next pass as usual");
      }
      await new Promise((r) => setTimeout(r, gapMs));
    }
  })();

  return {
    wake() {
      again = true;
      idle.wake();
    },
    async stop() {
      stopping = true;
      idle.wake();
      await loop;
    },
  };
}
