import type { ServerResponse } from "node:http";
import { isEndpointEventType, sseMessage } from "@tasksvc/contracts";
import { eventStreamMessages, eventStreamsEnded } from "@tasksvc/telemetry";
import type { FanInListener, LiveEvent } from "./fan-in.js";

export type EndReason = "client" | "lagging" | "revoked" | "shutdown" | "fan_in" | "error";

export interface SessionOptions {
  res: ServerResponse;
  org: string;
  types: ReadonlySet<string> | null;
  maxQueued: number;
  onEnd(s: Session, reason: EndReason): void;
}

/**
 * Events are sent only after `lastSent`, so the replay, the events kept at the switch and the live
 * ones never send one twice. A client that falls `maxQueued` events behind is told to resume and
 * closed, so one slow reader never holds the replica's memory.
 */
export class Session implements FanInListener {
  /** 0: only events published before sequences were recorded, if any. */
  lastSent = 0;
  live = false;
  ended = false;
  /** Before it, an error is answered as a problem instead. */
  started = false;
  private queue: string[] = [];
  private queueHead = 0;
  private blocked = false;

  constructor(private readonly o: SessionOptions) {
    o.res.on("close", () => this.end("client"));
    o.res.on("drain", () => this.flush());
  }

  get org(): string {
    return this.o.org;
  }

  wants(type: string): boolean {
    return this.o.types === null || this.o.types.has(type);
  }

  get seesEndpointEvents(): boolean {
    return this.o.types === null || [...this.o.types].some(isEndpointEventType);
  }

  deliver(e: LiveEvent): void {
    if (!this.live || e.seq <= this.lastSent) return;
    this.lastSent = e.seq;
    if (!this.wants(e.type)) return;
    eventStreamMessages.inc({ phase: "live" });
    this.write(sseMessage(e.id, e.type, e.json));
  }

  interrupted(): void {
    this.end("fan_in", "this server's feed of events was interrupted; reconnect with Last-Event-ID to resume where you stopped");
  }

  /** Resolves once the socket can take more, so a long replay reads the next page only as fast as the client reads this one. */
  async replay(seq: number, id: string, type: string, json: string): Promise<void> {
    if (this.ended || !this.started) return;
    if (seq > this.lastSent) this.lastSent = seq;
    eventStreamMessages.inc({ phase: "replay" });
    if (this.o.res.write(sseMessage(id, type, json))) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.o.res.off("drain", done);
        this.o.res.off("close", done);
        resolve();
      };
      this.o.res.once("drain", done);
      this.o.res.once("close", done);
    });
  }

  comment(text: string): void {
    if (this.started && !this.ended && !this.blocked) this.o.res.write(`: ${text}\n\n`);
  }

  raw(text: string): void {
    if (!this.ended) this.write(text);
  }

  // The first write of a response sends Node's implicit head (a 200 without Content-Type), after
  // which a browser's EventSource fails for good instead of reconnecting.
  private write(frame: string): void {
    if (this.ended || !this.started) return;
    if (this.blocked) {
      this.queue.push(frame);
      if (this.queue.length - this.queueHead > this.o.maxQueued)
        this.end("lagging", "too far behind: reconnect with Last-Event-ID to resume where you stopped");
      return;
    }
    if (!this.o.res.write(frame)) this.blocked = true;
  }

  private flush(): void {
    this.blocked = false;
    while (this.queueHead < this.queue.length && !this.ended) {
      const frame = this.queue[this.queueHead++] as string;
      if (!this.o.res.write(frame)) {
        this.blocked = true;
        break;
      }
    }
    if (this.queueHead === this.queue.length) {
      this.queue = [];
      this.queueHead = 0;
    }
  }

  /** The socket is destroyed if the client does not take the rest within 10 s. */
  end(reason: EndReason, why?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.live = false;
    const res = this.o.res;
    if (this.started && !res.destroyed && !res.writableEnded) {
      // Behind a full buffer, what is queued is given up: the client resumes from its last id.
      if (why !== undefined) res.write(`: ${why}\n\n`);
      res.end();
      setTimeout(() => res.destroy(), 10_000).unref();
    }
    this.queue = [];
    eventStreamsEnded.inc({ reason });
    this.o.onEnd(this, reason);
  }
}
