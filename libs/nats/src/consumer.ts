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

/**
 * What a handler decided about one message: done ("ack"), try again after `nak` milliseconds, or
 * never again ("term": the message can never succeed). A handler that throws gets a nak after
 * `retryDelay(deliveries)`, or a term on its last allowed delivery.
 */
export type ConsumeOutcome = "ack" | "term" | { nak: number };

export interface MessageMeta {
  subject: string;
  /** The message's sequence in the stream. */
  seq: number;
  /** 1 on the first delivery. */
  deliveries: number;
  headers: MsgHdrs | undefined;
  /** Bound to stream, durable, subject, seq and deliveries. */
  log: Logger;
  /** Restarts the ack timer: for a handler that may outlast `ackWaitMs`. */
  working(): void;
}

export interface ConsumeOptions<S extends z.ZodType> {
  stream: string;
  /** The durable consumer's name; replicas that share it share the work. */
  durable: string;
  /** One subject filter (NATS 2.9 has no multiple filters); the whole stream when absent. */
  filterSubject?: string;
  /** Every message is parsed with it; one that does not parse is logged and terminated. */
  schema: S;
  handle(msg: z.output<S>, meta: MessageMeta): Promise<ConsumeOutcome>;
  /** Handlers in flight at most, in this process. Messages are handled in no particular order. */
  concurrency: number;
  /** How long the server waits for an answer before delivering a message again. */
  ackWaitMs: number;
  /**
   * Whether each ack waits for the server's confirmation (a request/reply) before the handler's
   * slot frees (default true). A consumer whose handler is idempotent may say false: its acks are
   * plain publishes, flushed per loop turn and by stop(), and one the server never got brings a
   * message back that changes nothing (decision 0020: the fan-out saves a round trip per event).
   */
  confirmAcks?: boolean;
  /** Deliveries per message at most (server default: unlimited). */
  maxDeliver?: number;
  /** Milliseconds before the next delivery after a handler threw on delivery `n` (default `retryDelay`). */
  retryDelay?: (deliveries: number) => number;
  /** How long one pull waits on the server for messages (default 10 s; the nats.js minimum is 1 s). */
  pullExpiresMs?: number;
  log: Logger;
  /**
   * Where the consumer reports whether it is attached (its last pull reached the consumer on the
   * server), as the readiness check `consumer:<durable>`: the service's `health` (libs/runtime).
   */
  health?: { check(name: string, fn: Check): () => void };
}

export interface Consumption {
  /**
   * Stops pulling and resolves once every handler in flight has finished and its answer has
   * reached the server. The durable consumer stays: the next `consume()` with its name resumes.
   */
  stop(): Promise<void>;
}

/** The default redelivery schedule after a handler threw: 1 s, 2 s, 4 s … at most a minute. */
export function retryDelay(deliveries: number): number {
  return Math.min(1000 * 2 ** Math.max(0, deliveries - 1), 60_000);
}

const CONSUMER_NOT_FOUND = 10014;
const STREAM_NOT_FOUND = 10059;
const streamMissing = (e: unknown): boolean => e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND;

/**
 * Creates the durable pull consumer (explicit ack), or brings an existing one to these settings.
 * Replicas may start at once: a lost creation race is followed by an update, as in ensureStream.
 */
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
      // Another replica created it first: fall through to the update.
    }
  }
  await jsm.consumers.update(opts.stream, opts.durable, changeable);
}

/**
 * Handles the messages of a durable JetStream consumer, parsed with a zod schema, at most
 * `concurrency` at a time, each answered by ack, nak with a delay, or term.
 *
 * Why fetch and not `consume()`: nats.js's consume() pulls again as messages *arrive*, not as they
 * are *handled*, so with slow handlers its buffer grows and buffered messages run out their ack
 * wait before a handler sees them (then come again: duplicates). Here a pull asks for exactly as
 * many messages as there are free handler slots, so every message delivered to this process has a
 * handler from the moment it arrives, and its ack timer measures the handler alone.
 *
 * Nothing a message carries can end the process: bad JSON and schema failures are logged and
 * terminated (they would fail on every delivery), a handler's error becomes a nak with backoff.
 */
export async function consume<S extends z.ZodType>(nc: NatsConnection, opts: ConsumeOptions<S>): Promise<Consumption> {
  const concurrency = opts.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`consume(${opts.durable}): concurrency must be a positive integer`);
  const delayAfter = opts.retryDelay ?? retryDelay;
  const confirmAcks = opts.confirmAcks ?? true;
  const expires = Math.max(1000, opts.pullExpiresMs ?? 10_000);
  const base = { stream: opts.stream, durable: opts.durable };

  // A stream that does not exist yet (its owner starts later) is not a failure to start: the pull
  // loop below retries, with backoff, exactly as it does for a stream or consumer lost later.
  // Waiting for it is normal on a first start, so it is one info line, not a warning per retry.
  const js = jetstream(nc);
  let consumer: Consumer | undefined;
  let waitingForStream = false;
  let everAttached = false;
  const unexpected = (msg: string) => (err: unknown) => {
    // A stream that goes missing after this consumer ran is an operator's deletion: a warning.
    if (everAttached || !streamMissing(err)) return opts.log.warn({ err, ...base }, msg);
    if (waitingForStream) return opts.log.debug(base, "stream still missing; retrying");
    waitingForStream = true;
    opts.log.info(base, `waiting for stream ${opts.stream} (made by the service that publishes to it)`);
  };
  await ensureConsumer(nc, opts).catch(unexpected("consumer not created yet; retrying"));

  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let batch: ConsumerMessages | undefined;
  // Attached once a pull reached the consumer; detached by a failed one, until the next succeeds.
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
  // The server's view of this consumer at scrape time (one request for the three gauges of a
  // scrape); every replica reports the same figures.
  const info = sharedFor(500, () => jetstreamManager(nc).then((jsm) => jsm.consumers.info(opts.stream, opts.durable)));
  const removeSamples = [
    sampled.consumerPending(async () => [{ labels: label, value: (await info()).num_pending }]),
    sampled.consumerAckPending(async () => [{ labels: label, value: (await info()).num_ack_pending }]),
    sampled.consumerRedelivered(async () => [{ labels: label, value: (await info()).num_redelivered }]),
  ];
  // Stopping cuts a retry pause short.
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

  /** Handles one message and answers it; resolves to what it answered ("error": a nak after a throw). */
  async function answer(m: JsMsg): Promise<"ack" | "nak" | "term" | "error"> {
    const deliveries = m.info.deliveryCount;
    if (deliveries > 1) redelivered.inc();
    // A child logger per message costs CPU; most messages log nothing, so build it on first use.
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
      // Acknowledged by the server before the slot frees: once stop() resolves, nothing this
      // consumer handled can be delivered again (a plain ack is a fire-and-forget publish).
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
    // handleOne answers every failure of the message itself; this catch is the last line (a closed
    // connection throws on ack), so that nothing becomes an unhandled rejection.
    const p = handleOne(m)
      .catch((err: unknown) => opts.log.error({ err, ...base, seq: m.seq }, "could not answer a message"))
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }

  const loop = (async () => {
    let failures = 0;
    while (!stopping) {
      // Pull only for free slots: the bound holds for delivered messages, not just running handlers.
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
        // Messages already delivered to this pull are handled even when stop() came meanwhile:
        // they are within the free slots, and handling them beats waiting out their ack wait.
        for await (const m of batch) dispatch(m);
        failures = 0;
        attached = true;
      } catch (err) {
        if (stopping) break;
        // Stream or consumer missing, server away, heartbeats missed: keep trying, more slowly.
        failures++;
        attached = false;
        unexpected("pull failed; retrying")(err);
        await pause(Math.min(100 * 2 ** failures, 5000));
        // A consumer deleted meanwhile (by an operator, with its stream), or not created yet, is
        // created again; its handle is looked up afresh.
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
        // Ends the pull waiting on the server. A message the server sends in that instant reaches
        // no one and is delivered again after ackWaitMs: late, never lost.
        void batch?.close();
        pauses.wake();
      }
      await loop;
      await Promise.all([...inFlight]);
      removeCheck?.();
      for (const remove of removeSamples) remove();
      // Naks and terms are fire-and-forget publishes: make sure the server has them.
      await nc.flush().catch(() => undefined);
    },
  };
}
