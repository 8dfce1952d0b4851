import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type Consumer,
  type ConsumerConfig,
  type ConsumerMessages,
  type JsMsg,
} from "@nats-io/jetstream";
import type { MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@tasksvc/logger";
import {
  consumerHandleDuration,
  consumerMessages,
  consumerRedeliveries,
  extractContext,
  inSpan,
  sampled,
  sharedFor,
  SpanKind,
  tracingEnabled,
  type Check,
} from "@tasksvc/telemetry";
import type { z } from "zod";
import { decodeJson } from "./json.js";
import { sleeper } from "./sleeper.js";
import { nanos } from "./streams.js";

/** A handler that throws gets a nak after `retryDelay(deliveries)`, or a term on its last allowed delivery. */
export type ConsumeOutcome = "ack" | "term" | { nak: number };

export interface MessageMeta {
  subject: string;
  seq: number;
  /** 1 on the first delivery. */
  deliveries: number;
  headers: MsgHdrs | undefined;
  log: Logger;
  /** Restarts the ack timer, for a handler that may outlast `ackWaitMs`. */
  working(): void;
}

export interface ConsumeOptions<S extends z.ZodType> {
  stream: string;
  /** Replicas that share it share the work. */
  durable: string;
  /** One subject filter: NATS 2.9 has no multiple filters. */
  filterSubject?: string;
  /** A message that does not parse is logged and terminated. */
  schema: S;
  handle(msg: z.output<S>, meta: MessageMeta): Promise<ConsumeOutcome>;
  /** Per process; messages are handled in no particular order. */
  concurrency: number;
  ackWaitMs: number;
  /** Default true; an idempotent handler may say false, since a plain ack the server never got only brings back a message that changes nothing. */
  confirmAcks?: boolean;
  maxDeliver?: number;
  retryDelay?: (deliveries: number) => number;
  /** Default 10 s; the nats.js minimum is 1 s. */
  pullExpiresMs?: number;
  log: Logger;
  /** Reports the readiness check `consumer:<durable>`: whether the last pull reached the consumer. */
  health?: { check(name: string, fn: Check): () => void };
}

export interface Consumption {
  /** Resolves once every handler in flight finished and its answer reached the server; the durable consumer stays. */
  stop(): Promise<void>;
}

/** 1 s, 2 s, 4 s … at most a minute. */
export function retryDelay(deliveries: number): number {
  return Math.min(1000 * 2 ** Math.max(0, deliveries - 1), 60_000);
}

const CONSUMER_NOT_FOUND = 10014;
const STREAM_NOT_FOUND = 10059;
const streamMissing = (e: unknown): boolean => e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND;

/** Replicas may start at once: a lost creation race is followed by an update. */
async function ensureConsumer(nc: NatsConnection, opts: ConsumeOptions<z.ZodType>): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const changeable = {
    ack_wait: nanos(opts.ackWaitMs),
    max_deliver: opts.maxDeliver ?? -1,
    ...(opts.filterSubject === undefined ? {} : { filter_subject: opts.filterSubject }),
  };
  try {
    await jsm.consumers.info(opts.stream, opts.durable);
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === CONSUMER_NOT_FOUND)) throw e;
    const config: Partial<ConsumerConfig> = {
      ...changeable,
      durable_name: opts.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
    };
    try {
      await jsm.consumers.add(opts.stream, config);
      return;
    } catch {
      // Another replica created it first.
    }
  }
  await jsm.consumers.update(opts.stream, opts.durable, changeable);
}

/**
 * Fetches rather than nats.js's consume(), which pulls as messages arrive, not as they are handled, so under slow handlers buffered
 * messages outlive their ack wait. Nothing a message carries can end the process: bad input is terminated, a handler's error naked.
 */
export async function consume<S extends z.ZodType>(nc: NatsConnection, opts: ConsumeOptions<S>): Promise<Consumption> {
  const concurrency = opts.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`consume(${opts.durable}): concurrency must be a positive integer`);
  const delayAfter = opts.retryDelay ?? retryDelay;
  const confirmAcks = opts.confirmAcks ?? true;
  const expires = Math.max(1000, opts.pullExpiresMs ?? 10_000);
  const base = { stream: opts.stream, durable: opts.durable };

  // A stream that does not exist yet (its owner starts later) is retried by the pull loop; on a
  // first start that is normal, so one info line rather than a warning per retry.
  const js = jetstream(nc);
  let consumer: Consumer | undefined;
  let waitingForStream = false;
  let everAttached = false;
  const unexpected = (msg: string) => (err: unknown) => {
    // A stream that goes missing after this consumer ran is an operator's deletion.
    if (everAttached || !streamMissing(err)) return opts.log.warn({ err, ...base }, msg);
    if (waitingForStream) return opts.log.debug(base, "stream still missing; retrying");
    waitingForStream = true;
    opts.log.info(base, `waiting for stream ${opts.stream} (made by the service that publishes to it)`);
  };
  await ensureConsumer(nc, opts).catch(unexpected("consumer not created yet; retrying"));

  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let batch: ConsumerMessages | undefined;
  let attached = false;
  const label = { consumer: opts.durable };
  const counted = {
    ack: consumerMessages.labels({ ...label, outcome: "ack" }),
    nak: consumerMessages.labels({ ...label, outcome: "nak" }),
    term: consumerMessages.labels({ ...label, outcome: "term" }),
    error: consumerMessages.labels({ ...label, outcome: "error" }),
  };
  const redelivered = consumerRedeliveries.labels(label);
  const handleTime = consumerHandleDuration.labels(label);
  const removeCheck = opts.health?.check(`consumer:${opts.durable}`, () => (stopping ? "stopping" : attached ? "ok" : "not_attached"));
  // One request for the three gauges of a scrape.
  const info = sharedFor(500, () => jetstreamManager(nc).then((jsm) => jsm.consumers.info(opts.stream, opts.durable)));
  const removeSamples = [
    sampled.consumerPending(async () => [{ labels: label, value: (await info()).num_pending }]),
    sampled.consumerAckPending(async () => [{ labels: label, value: (await info()).num_ack_pending }]),
    sampled.consumerRedelivered(async () => [{ labels: label, value: (await info()).num_redelivered }]),
  ];
  const pauses = sleeper();
  const pause = (ms: number) => pauses.sleep(ms);

  async function handleOne(m: JsMsg): Promise<void> {
    const started = performance.now();
    try {
      const outcome = tracingEnabled()
        ? await inSpan(
            `${opts.stream} process`,
            {
              kind: SpanKind.CONSUMER,
              parent: extractContext(m.headers),
              attributes: { "messaging.system": "nats", "messaging.destination.name": m.subject, "messaging.consumer.group.name": opts.durable },
            },
            () => answer(m),
          )
        : await answer(m);
      counted[outcome].inc();
    } finally {
      handleTime.observe((performance.now() - started) / 1000);
    }
  }

  /** "error": a nak after a throw. */
  async function answer(m: JsMsg): Promise<"ack" | "nak" | "term" | "error"> {
    const deliveries = m.info.deliveryCount;
    if (deliveries > 1) redelivered.inc();
    // A child logger per message costs CPU; most messages log nothing.
    let child: Logger | undefined;
    const meta: MessageMeta = {
      subject: m.subject,
      seq: m.seq,
      deliveries,
      headers: m.headers,
      get log() {
        return (child ??= opts.log.child({ ...base, subject: m.subject, seq: m.seq, deliveries }));
      },
      working: () => m.working(),
    };

    let raw: unknown;
    try {
      raw = decodeJson(m.data);
    } catch (err) {
      meta.log.error({ err }, "message is not JSON; terminated");
      m.term();
      return "term";
    }
    const parsed = opts.schema.safeParse(raw);
    if (!parsed.success) {
      meta.log.error({ issues: parsed.error.issues }, "message outside its schema; terminated");
      m.term();
      return "term";
    }

    let outcome: ConsumeOutcome;
    try {
      outcome = await opts.handle(parsed.data, meta);
    } catch (err) {
      if (opts.maxDeliver !== undefined && opts.maxDeliver > 0 && deliveries >= opts.maxDeliver) {
        meta.log.error({ err }, "handler failed on the last allowed delivery; terminated");
        m.term();
        return "error";
      }
      const delay = delayAfter(deliveries);
      meta.log.warn({ err, retry_in_ms: delay }, "handler failed; delivery again later");
      m.nak(delay);
      return "error";
    }

    if (outcome === "ack") {
      if (!confirmAcks) {
        m.ack();
        return "ack";
      }
      // Confirmed before the slot frees, so once stop() resolves nothing handled can come again.
      try {
        await m.ackAck();
      } catch (err) {
        meta.log.warn({ err }, "ack not confirmed; the message may be delivered again");
      }
      return "ack";
    }
    if (outcome === "term") {
      m.term();
      return "term";
    }
    m.nak(Math.max(0, outcome.nak));
    return "nak";
  }

  function dispatch(m: JsMsg): void {
    // The last line (a closed connection throws on ack), so nothing becomes an unhandled rejection.
    const p = handleOne(m)
      .catch((err: unknown) => opts.log.error({ err, ...base, seq: m.seq }, "could not answer a message"))
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }

  const loop = (async () => {
    let failures = 0;
    while (!stopping) {
      // Pull only for free slots, so the bound holds for delivered messages, not just running handlers.
      while (inFlight.size >= concurrency && !stopping) await Promise.race(inFlight);
      if (stopping) break;
      try {
        consumer ??= await js.consumers.get(opts.stream, opts.durable);
        batch = await consumer.fetch({ max_messages: concurrency - inFlight.size, expires });
        attached = true;
        everAttached = true;
        if (waitingForStream) {
          waitingForStream = false;
          opts.log.info(base, `stream ${opts.stream} found; consuming`);
        }
        if (stopping) void batch.close();
        // Messages already delivered are handled even after stop(): that beats waiting out their ack wait.
        for await (const m of batch) dispatch(m);
        failures = 0;
        attached = true;
      } catch (err) {
        if (stopping) break;
        failures++;
        attached = false;
        unexpected("pull failed; retrying")(err);
        await pause(Math.min(100 * 2 ** failures, 5000));
        // A consumer deleted meanwhile (with its stream, by an operator) is created again.
        consumer = undefined;
        if (!stopping) await ensureConsumer(nc, opts).catch(unexpected("consumer could not be ensured"));
      } finally {
        batch = undefined;
      }
    }
  })();

  return {
    async stop() {
      if (!stopping) {
        stopping = true;
        // A message the server sends in this instant is delivered again after ackWaitMs: late, never lost.
        void batch?.close();
        pauses.wake();
      }
      await loop;
      await Promise.all([...inFlight]);
      removeCheck?.();
      for (const remove of removeSamples) remove();
      // Naks and terms are fire-and-forget publishes.
      await nc.flush().catch(() => undefined);
    },
  };
}
