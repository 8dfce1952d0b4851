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

export { DeliverPolicy, jetstream, jetstreamManager };
export type { JetStreamClient, JetStreamManager };

const STREAM_NOT_FOUND = 10059;

/** Nanoseconds, as JetStream configuration wants durations. */
export const nanos = (ms: number) => ms * 1_000_000;

/**
 * Creates a stream, or brings an existing one to this configuration (several replicas may start
 * at once: a lost creation race is followed by an update). Uses only NATS 2.9 features.
 */
export async function ensureStream(nc: NatsConnection, cfg: Partial<StreamConfig> & { name: string; subjects: string[] }): Promise<void> {
  // On a JetStream cluster, replicas that create one stream together can time out: NATS 2.9
  // answers the second create through the new stream's leader, which may not be elected yet
  // (seen with three servers and streams at 3 replicas). The stream is there by then, or soon.
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
      // Another replica created it first: fall through to the update.
    }
  }
  const { name, ...rest } = cfg;
  await jsm.streams.update(name, rest);
}

/** Deletes every stream whose name starts with `prefix` (test clean-up of a namespace). */
export async function deleteStreams(nc: NatsConnection, prefix: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for await (const s of jsm.streams.list()) {
    if (s.config.name.startsWith(prefix)) await jsm.streams.delete(s.config.name);
  }
}

/**
 * Deletes everything a namespace made in JetStream: its streams (`<ns>_…`) and its object-store
 * buckets, whose streams JetStream names `OBJ_<bucket>` (`OBJ_<ns>_…`). Test and benchmark clean-up.
 */
export async function deleteNamespaceStreams(nc: NatsConnection, namespace: string): Promise<void> {
  await deleteStreams(nc, `${namespace}_`);
  await deleteStreams(nc, `OBJ_${namespace}_`);
}

/**
 * A JetStream client as an outbox relay's publisher (libs/db OutboxPublisher): the row's trace
 * context, when it has one, travels in the message's `traceparent` header.
 */
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
