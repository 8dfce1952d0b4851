import {
  DeliverPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { auditStream, auditSubjects } from "@tasksvc/contracts";

export { DeliverPolicy, jetstream, jetstreamManager };
export type { JetStreamClient, JetStreamManager };

const STREAM_NOT_FOUND = 10059;

/** JetStream configuration wants nanoseconds. */
export const nanos = (ms: number) => ms * 1_000_000;

/** Replicas may start at once: a lost creation race is followed by an update. NATS 2.9 features only. */
export async function ensureStream(nc: NatsConnection, cfg: Partial<StreamConfig> & { name: string; subjects: string[] }): Promise<void> {
  // On a cluster, creating one stream together can time out while its leader is elected; the stream is there by then, or soon.
  for (let attempt = 1; ; attempt++) {
    try {
      return await ensureStreamOnce(nc, cfg);
    } catch (e) {
      if (attempt >= 5 || (e as { name?: unknown }).name !== "TimeoutError") throw e;
      await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
}

async function ensureStreamOnce(nc: NatsConnection, cfg: Partial<StreamConfig> & { name: string; subjects: string[] }): Promise<void> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(cfg.name);
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND)) throw e;
    try {
      await jsm.streams.add(cfg);
      return;
    } catch {
      // Another replica created it first.
    }
  }
  const { name, ...rest } = cfg;
  await jsm.streams.update(name, rest);
}

export async function deleteStreams(nc: NatsConnection, prefix: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for await (const s of jsm.streams.list()) {
    if (s.config.name.startsWith(prefix)) await jsm.streams.delete(s.config.name);
  }
}

/** Object-store buckets' streams are named `OBJ_<bucket>`, so they are deleted too. */
export async function deleteNamespaceStreams(nc: NatsConnection, namespace: string): Promise<void> {
  await deleteStreams(nc, `${namespace}_`);
  await deleteStreams(nc, `OBJ_${namespace}_`);
}

/** The row's trace context travels in the message's `traceparent` header. */
export function outboxPublisher(js: JetStreamClient): {
  publish(subject: string, data: Uint8Array, opts: { msgID: string; traceparent?: string }): Promise<{ seq: number }>;
} {
  return {
    publish(subject, data, opts) {
      if (!opts.traceparent) return js.publish(subject, data, { msgID: opts.msgID });
      const h = headers();
      h.set("traceparent", opts.traceparent);
      return js.publish(subject, data, { msgID: opts.msgID, headers: h });
    },
  };
}

/**
 * Declared alike by every service that writes audit events, whichever starts first. Only a way to the
 * chain, which keeps the events: a week outlasts any outage of the chain's consumer worth riding out.
 */
export function auditStreamSpec(namespace: string): Partial<StreamConfig> & { name: string; subjects: string[] } {
  return { name: auditStream(namespace), subjects: [auditSubjects(namespace)], max_age: nanos(7 * 24 * 3600_000), duplicate_window: nanos(3600_000) };
}
