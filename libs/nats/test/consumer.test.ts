import { randomUUID } from "node:crypto";
import { createLogger } from "@tasksvc/logger";
import { eventually } from "@tasksvc/testing";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  connectNats,
  consume,
  deleteStreams,
  encodeJson,
  ensureStream,
  jetstream,
  jetstreamManager,
  retryDelay,
  type ConsumeOptions,
  type Consumption,
  type NatsConnection,
} from "../src/index.js";

// Streams of this file only, under the run's namespace so that the run's clean-up removes them too.
const stack = inject("stack");
const prefix = `${stack.namespace}_consumer_${randomUUID().slice(0, 8)}`;
const log = createLogger({ service: "consumer-test", level: "silent" });
const Job = z.object({ n: z.number().int() });
type Job = z.infer<typeof Job>;

let nc: NatsConnection;
const running: Consumption[] = [];
let streams = 0;

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "consumer-test" });
});

afterAll(async () => {
  await Promise.allSettled(running.map((c) => c.stop()));
  await deleteStreams(nc, prefix);
  await nc.drain();
});

/** A stream of its own for one test: `<prefix>_<i>` on subjects `<prefix>.<i>.>`. */
async function freshStream() {
  const i = ++streams;
  const name = `${prefix}_${i}`;
  const subject = `${prefix}.${i}`;
  await ensureStream(nc, { name, subjects: [`${subject}.>`] });
  const js = jetstream(nc);
  return {
    name,
    /** Publishes each value as JSON (or raw text) and returns the stream sequences. */
    async publish(values: Array<unknown>, raw = false): Promise<number[]> {
      const seqs: number[] = [];
      for (const v of values) seqs.push((await js.publish(`${subject}.job`, raw ? String(v) : encodeJson(v))).seq);
      return seqs;
    },
  };
}

async function start(opts: Omit<ConsumeOptions<typeof Job>, "schema" | "log"> & Partial<Pick<ConsumeOptions<typeof Job>, "log">>): Promise<Consumption> {
  const c = await consume(nc, { log, schema: Job, ...opts });
  running.push(c);
  return c;
}

/** True once the server holds no unanswered delivery and nothing left to deliver. */
async function settled(stream: string, durable: string, lastSeq: number): Promise<boolean> {
  const info = await (await jetstreamManager(nc)).consumers.info(stream, durable);
  return info.num_ack_pending === 0 && info.num_pending === 0 && info.ack_floor.stream_seq >= lastSeq;
}

/** A gate handlers wait at until the test opens it (then a fresh one closes behind them). */
function gate() {
  let open: () => void = () => undefined;
  let closed = new Promise<void>((r) => (open = r));
  return {
    wait: () => closed,
    release() {
      const o = open;
      closed = new Promise<void>((r) => (open = r));
      o();
    },
  };
}

describe("consume()", () => {
  it("when the stream does not exist yet at start, then the consumer starts anyway, says so in one info line (no warning, no stack) and handles its messages once the stream is created", async () => {
    // The webhooks service may start before the tasks service has declared the task-event stream.
    const i = ++streams;
    const name = `${prefix}_${i}`;
    const subject = `${prefix}.${i}`;
    const seen: number[] = [];
    const lines: Array<{ level: number; msg: string; err?: unknown }> = [];
    const captured = createLogger({ service: "consumer-test", level: "debug", destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
    await start({
      log: captured,
      stream: name,
      durable: "late_stream",
      concurrency: 2,
      ackWaitMs: 5000,
      handle: async (job: Job) => {
        seen.push(job.n);
        return "ack";
      },
    });
    // Several retries find no stream before it comes.
    await eventually(() => lines.filter((l) => l.msg === "stream still missing; retrying").length >= 2, {
      what: "two retries without the stream",
      timeoutMs: 20_000,
    });
    await ensureStream(nc, { name, subjects: [`${subject}.>`] });
    const js = jetstream(nc);
    for (const n of [1, 2, 3]) await js.publish(`${subject}.job`, encodeJson({ n }));
    await eventually(() => seen.length === 3, { what: "the three jobs handled" });
    expect([...seen].sort()).toEqual([1, 2, 3]);
    const shown = lines.filter((l) => l.level >= 30);
    expect(
      shown.map((l) => l.msg),
      JSON.stringify(lines),
    ).toEqual([`waiting for stream ${name} (made by the service that publishes to it)`, `stream ${name} found; consuming`]);
    expect(lines.filter((l) => l.err !== undefined)).toEqual([]);
  });

  it("when valid messages arrive, then the handler gets them parsed and each is acknowledged once", async () => {
    const s = await freshStream();
    const seen: Array<{ job: Job; seq: number; deliveries: number }> = [];
    const seqs = await s.publish([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await start({
      stream: s.name,
      durable: "ack",
      concurrency: 2,
      ackWaitMs: 5000,
      handle: async (job, meta) => {
        seen.push({ job, seq: meta.seq, deliveries: meta.deliveries });
        return "ack";
      },
    });
    await eventually(() => settled(s.name, "ack", seqs.at(-1) ?? 0), { what: "all acknowledged" });
    expect(
      seen.sort((a, b) => a.seq - b.seq),
      JSON.stringify(seen),
    ).toEqual(seqs.map((seq, i) => ({ job: { n: i + 1 }, seq, deliveries: 1 })));
  });

  it("when acks are unconfirmed (an idempotent handler), then each message is still acknowledged once, and stop() leaves none unanswered on the server", async () => {
    const s = await freshStream();
    const seen: number[] = [];
    const seqs = await s.publish(Array.from({ length: 40 }, (_, i) => ({ n: i })));
    const plain = () =>
      start({
        stream: s.name,
        durable: "plain-ack",
        concurrency: 8,
        ackWaitMs: 5000,
        confirmAcks: false,
        handle: async (job) => {
          seen.push(job.n);
          return "ack";
        },
      });
    const c = await plain();
    await eventually(() => seen.length === 40, { what: "all handled" });
    await c.stop();
    // Right after stop(), without waiting: its flush has taken every plain ack to the server.
    expect(await settled(s.name, "plain-ack", seqs.at(-1) ?? 0)).toBe(true);
    // A consumer started again on the durable gets none of them, only a job published after them
    // (the server delivers in stream order, so any of them still pending would come first).
    const again = await plain();
    await s.publish([{ n: 40 }]);
    await eventually(() => seen.includes(40), { what: "the job published after the restart" });
    await again.stop();
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 41 }, (_, i) => i));
  });

  it("when a handler answers nak with a delay, then the message comes again after that delay, marked as a redelivery", async () => {
    const s = await freshStream();
    const deliveries: Array<{ at: number; n: number }> = [];
    await s.publish([{ n: 7 }]);
    await start({
      stream: s.name,
      durable: "nak",
      concurrency: 1,
      ackWaitMs: 10_000,
      handle: async (_job, meta) => {
        deliveries.push({ at: Date.now(), n: meta.deliveries });
        return meta.deliveries === 1 ? { nak: 600 } : "ack";
      },
    });
    await eventually(() => deliveries.length >= 2, { what: "delivered again" });
    const [first, second] = deliveries;
    expect(
      deliveries.map((d) => d.n),
      JSON.stringify(deliveries),
    ).toEqual([1, 2]);
    // Well short of the 10 s ack wait: the nak's own delay brought it back, not a timeout.
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(500);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeLessThan(5000);
  });

  it("when a handler answers term, then the server never delivers the message again", async () => {
    const s = await freshStream();
    const handled: number[] = [];
    const [seq] = await s.publish([{ n: 1 }]);
    await start({
      stream: s.name,
      durable: "term",
      concurrency: 1,
      // A short ack wait: a message that was not terminated would be back within a second.
      ackWaitMs: 1000,
      handle: async (_job, meta) => {
        handled.push(meta.deliveries);
        return "term";
      },
    });
    // Terminated means answered for good: nothing pending, the ack floor past it.
    await eventually(() => settled(s.name, "term", seq ?? 0), { what: "terminated" });
    const info = await (await jetstreamManager(nc)).consumers.info(s.name, "term");
    expect(info.num_redelivered, JSON.stringify(info)).toBe(0);
    expect(handled).toEqual([1]);
  });

  it("when a payload is not JSON or not of the schema, then it is terminated without reaching the handler and the consumer keeps going", async () => {
    const s = await freshStream();
    const handled: Job[] = [];
    const seqs = [...(await s.publish(["{not json"], true)), ...(await s.publish([{ n: "one" }, { m: 1 }, { n: 4 }]))];
    await start({
      stream: s.name,
      durable: "bad",
      concurrency: 1,
      ackWaitMs: 1000,
      handle: async (job) => {
        handled.push(job);
        return "ack";
      },
    });
    await eventually(() => settled(s.name, "bad", seqs.at(-1) ?? 0), { what: "all answered" });
    expect(handled).toEqual([{ n: 4 }]);
    const info = await (await jetstreamManager(nc)).consumers.info(s.name, "bad");
    expect(info.num_redelivered, JSON.stringify(info)).toBe(0);
  });

  it("when a handler throws, then the message is delivered again after the retry delay, and terminated after maxDeliver deliveries", async () => {
    const s = await freshStream();
    const attempts: Record<number, number[]> = {};
    const seqs = await s.publish([{ n: 1 }, { n: 2 }]);
    await start({
      stream: s.name,
      durable: "throws",
      concurrency: 2,
      ackWaitMs: 10_000,
      maxDeliver: 3,
      retryDelay: () => 50,
      handle: async (job, meta) => {
        (attempts[job.n] ??= []).push(meta.deliveries);
        // n=1 succeeds on its second delivery; n=2 never does.
        if (job.n === 1 && meta.deliveries === 2) return "ack";
        throw new Error(`job ${job.n} failed`);
      },
    });
    await eventually(() => settled(s.name, "throws", seqs.at(-1) ?? 0), { what: "all answered" });
    expect(attempts).toEqual({ 1: [1, 2], 2: [1, 2, 3] });
  });

  it("when messages outnumber the concurrency, then no more than that many handlers ever run at once, and every message is handled", async () => {
    const s = await freshStream();
    const total = 20;
    const concurrency = 3;
    const g = gate();
    let inFlight = 0;
    let maxInFlight = 0;
    let done = 0;
    await s.publish(Array.from({ length: total }, (_, i) => ({ n: i })));
    await start({
      stream: s.name,
      durable: "bounded",
      concurrency,
      ackWaitMs: 10_000,
      handle: async () => {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await g.wait();
        inFlight--;
        done++;
        return "ack";
      },
    });
    // Each round: as many handlers as allowed are waiting at the gate; a 4th would show up here.
    while (done < total) {
      const expected = Math.min(concurrency, total - done);
      await eventually(() => inFlight >= expected, { what: `${expected} handlers in flight` });
      expect(inFlight).toBeLessThanOrEqual(concurrency);
      const before = done;
      g.release();
      await eventually(() => done >= before + expected, { what: "released handlers finished" });
    }
    expect(maxInFlight).toBe(concurrency);
    expect(done).toBe(total);
  });

  it("when stopped with handlers in flight, then stop waits for them, the durable stays, and a restarted consumer handles the rest: none lost, none acknowledged twice", async () => {
    const s = await freshStream();
    const total = 12;
    const seqs = await s.publish(Array.from({ length: total }, (_, i) => ({ n: i })));
    const g = gate();
    const first: number[] = [];
    let inFlight = 0;
    const a = await start({
      stream: s.name,
      durable: "resume",
      concurrency: 2,
      // Short, so that a message sent to the pull that stop() closed comes back to the restart soon.
      ackWaitMs: 1500,
      handle: async (job) => {
        inFlight++;
        await g.wait();
        first.push(job.n);
        inFlight--;
        return "ack";
      },
    });
    await eventually(() => inFlight === 2, { what: "two handlers in flight" });
    let stopped = false;
    const stopping = a.stop().then(() => (stopped = true));
    // A round trip to the server later, stop() is still waiting for the handlers at the gate.
    await nc.flush();
    expect(stopped).toBe(false);
    expect(inFlight).toBe(2);
    g.release();
    await stopping;
    expect(inFlight).toBe(0);
    expect(first.length).toBeGreaterThanOrEqual(2);
    expect(first.length).toBeLessThan(total);
    const info = await (await jetstreamManager(nc)).consumers.info(s.name, "resume");
    expect(info.config.durable_name).toBe("resume");

    const second: number[] = [];
    await start({
      stream: s.name,
      durable: "resume",
      concurrency: 4,
      ackWaitMs: 1500,
      handle: async (job) => {
        second.push(job.n);
        return "ack";
      },
    });
    await eventually(() => settled(s.name, "resume", seqs.at(-1) ?? 0), { what: "the rest handled" });
    const all = [...first, ...second].sort((x, y) => x - y);
    expect(all, `first ${JSON.stringify(first)} then ${JSON.stringify(second)}`).toEqual(Array.from({ length: total }, (_, i) => i));
  });
});

describe("retryDelay()", () => {
  it("when deliveries fail in a row, then the delay doubles from 1 s and stops growing at a minute", () => {
    expect([1, 2, 3, 4, 7, 8, 50].map(retryDelay)).toEqual([1000, 2000, 4000, 8000, 60_000, 60_000, 60_000]);
  });
});
