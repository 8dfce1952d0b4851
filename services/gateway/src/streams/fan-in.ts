import { eventBody, type OrgEvent, taskEventsStream } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { DeliverPolicy, jetstream, jetstreamManager, type NatsConnection } from "@tasksvc/nats";

export interface LiveEvent {
  seq: number;
  org: string;
  type: string;
  id: string;
  json: string;
}

export interface FanInListener {
  deliver(e: LiveEvent): void;
  interrupted(): void;
}

export interface FanInOptions {
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  recentMax?: number;
  recentMs?: number;
  idleMs?: number;
}

interface Recent extends LiveEvent {
  at: number;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Only what the stream needs is checked (the feed shows the rest as it is). */
function envelopeOf(data: Uint8Array): OrgEvent | undefined {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isRecord(v) || typeof v["id"] !== "string" || typeof v["type"] !== "string" || typeof v["organization_id"] !== "string") return undefined;
  if (typeof v["created_at"] !== "string" || !isRecord(v["data"])) return undefined;
  return v as unknown as OrgEvent;
}

/**
 * One consumer per replica, never one per client: a thousand open streams cost JetStream what one
 * does. It keeps the last events it read, so a resumed stream can switch from the database's copy
 * of the past to the live events without a gap (decision 0027).
 */
export function createFanIn(opts: FanInOptions) {
  const recentMax = opts.recentMax ?? 20_000;
  const recentMs = opts.recentMs ?? 60_000;
  const idleMs = opts.idleMs ?? 30_000;
  const stream = taskEventsStream(opts.namespace);
  const byOrg = new Map<string, Set<FanInListener>>();
  let listeners = 0;
  let recent: Recent[] = [];
  let head = 0;
  let lastSeq = 0;
  let coverFrom = 1;
  let running: Promise<{ stop(): void }> | undefined;
  let idleTimer: NodeJS.Timeout | undefined;

  function evict(now: number): void {
    while (head < recent.length) {
      const e = recent[head] as Recent;
      if (recent.length - head <= recentMax && now - e.at <= recentMs) break;
      coverFrom = e.seq + 1;
      head++;
    }
    // Compacted now and then rather than shifted per event.
    if (head > 1024 && head * 2 > recent.length) {
      recent = recent.slice(head);
      head = 0;
    }
  }

  function onEvent(seq: number, data: Uint8Array): void {
    lastSeq = seq;
    const envelope = envelopeOf(data);
    if (!envelope) {
      opts.log.warn({ seq }, "skipped a task event that is not an envelope");
      return;
    }
    const e: Recent = {
      seq,
      org: envelope.organization_id,
      type: envelope.type,
      id: envelope.id,
      json: JSON.stringify(eventBody(envelope)),
      at: Date.now(),
    };
    recent.push(e);
    evict(e.at);
    const set = byOrg.get(e.org);
    if (set) for (const l of set) l.deliver(e);
  }

  /** What a failed reader kept is no longer known to be complete. */
  function interrupt(): void {
    running = undefined;
    recent = [];
    head = 0;
    const all = [...byOrg.values()].flatMap((s) => [...s]);
    byOrg.clear();
    listeners = 0;
    for (const l of all) l.interrupted();
  }

  async function start(): Promise<{ stop(): void }> {
    const jsm = await jetstreamManager(opts.nc);
    const info = await jsm.streams.info(stream);
    const first = info.state.last_seq + 1;
    lastSeq = first - 1;
    coverFrom = first;
    recent = [];
    head = 0;
    const consumer = await jetstream(opts.nc).consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: first });
    const messages = await consumer.consume({ max_messages: 1024 });
    let stopping = false;
    void (async () => {
      try {
        // An ordered consumer: the client recreates it after a gap or a reconnect where it left off.
        for await (const m of messages) onEvent(m.seq, m.data);
      } catch (err) {
        opts.log.warn({ err }, "the live event reader failed");
      }
      if (!stopping) interrupt();
    })();
    return {
      stop() {
        stopping = true;
        void messages.close();
      },
    };
  }

  function stopIfIdle(): void {
    if (listeners > 0 || !running) return;
    const r = running;
    running = undefined;
    recent = [];
    head = 0;
    void r.then((c) => c.stop()).catch(() => undefined);
  }

  return {
    async attach(org: string, l: FanInListener): Promise<void> {
      clearTimeout(idleTimer);
      if (!running) {
        const starting = start();
        running = starting;
        starting.catch(() => {
          if (running === starting) running = undefined;
        });
      }
      await running;
      let set = byOrg.get(org);
      if (!set) byOrg.set(org, (set = new Set()));
      if (!set.has(l)) listeners++;
      set.add(l);
    },
    detach(org: string, l: FanInListener): void {
      const set = byOrg.get(org);
      if (!set?.delete(l)) return;
      listeners--;
      if (set.size === 0) byOrg.delete(org);
      if (listeners === 0) {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(stopIfIdle, idleMs);
        idleTimer.unref();
      }
    },
    /** Every event with this sequence or a later one is in `recentOf()` or yet to be delivered. */
    coverFrom: () => coverFrom,
    lastSeq: () => lastSeq,
    recentOf(org: string, seq: number): LiveEvent[] {
      evict(Date.now());
      const out: LiveEvent[] = [];
      for (let i = head; i < recent.length; i++) {
        const e = recent[i] as Recent;
        if (e.seq > seq && e.org === org) out.push(e);
      }
      return out;
    },
    stop(): void {
      clearTimeout(idleTimer);
      listeners = 0;
      byOrg.clear();
      stopIfIdle();
    },
  };
}
export type FanIn = ReturnType<typeof createFanIn>;
