import { randomUUID } from "node:crypto";
import {
  MAX_STREAMS_PER_CREDENTIAL,
  MAX_STREAMS_PER_ORGANIZATION,
  type ReplayEventsOutput,
  STREAM_HEARTBEAT_MS,
  type StreamEventsQuery,
  type StreamPosition,
  systemContext,
} from "@tasksvc/contracts";
import { AppError, fieldError, isAppError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import { eventStreamsOpen } from "@tasksvc/telemetry";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Authenticator } from "../auth.js";
import type { Clients } from "../clients.js";
import type { StreamRequest } from "../pipeline/operation.js";
import type { GatewayRepo } from "../repo/gateway-repo.js";
import type { FanIn } from "./fan-in.js";
import { type EndReason, Session } from "./session.js";

export interface EventStreamsOptions {
  fanIn: FanIn;
  tasks: Pick<Clients["tasks"], "call">;
  auth: Pick<Authenticator, "authenticate" | "onChange">;
  repo: Pick<GatewayRepo, "openStream" | "closeStream" | "renewStreams" | "closeReplica">;
  log: Logger;
  heartbeatMs?: number;
  maxQueued?: number;
  switchTimeoutMs?: number;
  replayBytesPerSecond?: number;
}

const LEASE_SECONDS = 15;
const RENEW_MS = 5_000;
const REPLAY_PAGE = 500;
const LAST_EVENT_ID = /^[\x21-\x7E]{1,100}$/;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A replay is the one read a client can make as large as it likes, parsed and written by the
 * process that serves every other organization: paced, a stream far behind catches up some
 * seconds later instead of taking the replica's CPU from everyone else meanwhile.
 */
export const REPLAY_BYTES_PER_SECOND = 4 * 1024 * 1024;

/** Bounded to the organizations replaying now: an entry is dropped once its bucket is full again. */
export function replayPacer(rate = REPLAY_BYTES_PER_SECOND, now: () => number = Date.now) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    /** Answers how long to wait before sending more. */
    take(org: string, bytes: number): number {
      const t = now();
      const b = buckets.get(org) ?? { tokens: rate, at: t };
      b.tokens = Math.min(rate, b.tokens + ((t - b.at) / 1000) * rate) - bytes;
      b.at = t;
      buckets.set(org, b);
      for (const [k, v] of buckets) if (v.tokens + ((t - v.at) / 1000) * rate >= rate) buckets.delete(k);
      return b.tokens >= 0 ? 0 : Math.ceil((-b.tokens / rate) * 1000);
    },
  };
}

/** Replays what a resuming client missed, then switches it to live without a gap or a twin (decision 0027). */
export function createEventStreams(opts: EventStreamsOptions) {
  const replica = randomUUID();
  const pacer = replayPacer(opts.replayBytesPerSecond);
  const sessions = new Map<Session, { id: string; authorization: string | undefined; expiry?: NodeJS.Timeout }>();
  let stopping = false;

  const heartbeat = setInterval(() => {
    // A byte before the head would make Node send a 200 without Content-Type.
    for (const s of sessions.keys()) if (s.started) s.comment("keep-alive");
  }, opts.heartbeatMs ?? STREAM_HEARTBEAT_MS);
  heartbeat.unref();
  const lease = setInterval(() => {
    if (sessions.size === 0) return;
    const open = [...sessions.values()].map((h) => h.id);
    opts.repo.renewStreams(replica, LEASE_SECONDS, open).catch((err: unknown) => opts.log.warn({ err }, "could not renew the streams' lease"));
  }, RENEW_MS);
  lease.unref();

  async function recheck(s: Session): Promise<void> {
    const held = sessions.get(s);
    if (!held) return;
    try {
      const identity = await opts.auth.authenticate(held.authorization, systemContext(`stream-${held.id}`));
      if (!identity.scopes.includes("tasks:read")) s.end("revoked", "the credential no longer has the scope tasks:read");
      else if (s.seesEndpointEvents && !identity.scopes.includes("webhooks:read"))
        s.end("revoked", "the credential no longer has the scope webhooks:read, which the endpoint events of this stream need");
    } catch (e) {
      // A lookup that failed (keys unreachable) proves nothing: the next change or reconnect checks again.
      if (isAppError(e) && (e.status === 401 || e.status === 403)) s.end("revoked", "the credential is no longer valid");
    }
  }
  const offAuth = opts.auth.onChange((org) => {
    for (const s of sessions.keys()) if (org === undefined || s.org === org) void recheck(s);
  });

  function ended(s: Session, _reason: EndReason): void {
    const held = sessions.get(s);
    if (!held) return;
    sessions.delete(s);
    clearTimeout(held.expiry);
    eventStreamsOpen.dec();
    opts.fanIn.detach(s.org, s);
    if (!stopping) opts.repo.closeStream(held.id).catch((err: unknown) => opts.log.warn({ err }, "could not close a stream's lease"));
  }

  function resumeFrom(req: FastifyRequest, query: StreamEventsQuery): { id: string; pointer: string } | undefined {
    const header = req.headers["last-event-id"];
    if (typeof header === "string" && header !== "") {
      if (!LAST_EVENT_ID.test(header)) throw fieldError("Last-Event-ID", "must be an event id, 1-100 visible ASCII characters");
      return { id: header, pointer: "Last-Event-ID" };
    }
    return query.after === undefined ? undefined : { id: query.after, pointer: "/after" };
  }

  /** Asked for before the answer starts: an unknown id is a 400, not a stream. */
  async function firstPage(r: StreamRequest, resume: { id: string; pointer: string }): Promise<ReplayEventsOutput> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const page = await opts.tasks.call("replayEvents", { from: { event_id: resume.id }, types: r.query.type, limit: REPLAY_PAGE }, r.ctx);
      if (page.unknown) throw fieldError(resume.pointer, "names no event of this organization in the last 30 days: list GET /v1/events to find where to start");
      if (!page.pending) return page;
      // Written but not yet published: it will be within moments.
      if (Date.now() > deadline) throw new AppError("service_unavailable", "That event is not published yet; retry shortly.", { retryAfter: 1 });
      await sleep(100);
    }
  }

  /**
   * Once the stored events reach the ones this replica still keeps, the kept ones are sent and the
   * stream goes live in one synchronous step: no gap, no twin.
   */
  async function catchUp(s: Session, r: StreamRequest, first: ReplayEventsOutput): Promise<void> {
    let page = first;
    let position: StreamPosition = first.next;
    // Counted from when the stored events are all sent: a long (paced) replay is not a slow switch.
    let giveUp: number | undefined;
    for (;;) {
      let bytes = 0;
      for (const it of page.items) {
        const json = JSON.stringify(it.event);
        bytes += json.length;
        await s.replay(it.seq, it.event.id, it.event.type, json);
        if (s.ended) return;
      }
      const wait = pacer.take(s.org, bytes);
      if (wait > 0) await sleep(wait);
      if (s.ended) return;
      position = page.next;
      if (!page.more) {
        const kept = opts.fanIn.recentOf(s.org, page.through);
        if (opts.fanIn.coverFrom() <= page.through + 1) {
          if (s.lastSent < page.through) s.lastSent = page.through;
          s.live = true;
          for (const e of kept) s.deliver(e);
          return;
        }
        giveUp ??= Date.now() + (opts.switchTimeoutMs ?? 15_000);
        if (Date.now() > giveUp) return s.end("fan_in", "the stored events did not reach the live ones in time; reconnect with Last-Event-ID to resume");
        await sleep(50);
      }
      if (s.ended) return;
      page = await opts.tasks.call("replayEvents", { from: { position }, types: r.query.type, limit: REPLAY_PAGE }, r.ctx);
    }
  }

  return {
    async serve(req: FastifyRequest, reply: FastifyReply, r: StreamRequest): Promise<void> {
      if (stopping) throw new AppError("service_unavailable", "This server is stopping; reconnect to another.", { retryAfter: 1 });
      const resume = resumeFrom(req, r.query);
      if (req.method === "HEAD") return void reply.code(200).type("text/event-stream; charset=utf-8").send();
      const id = randomUUID();
      const opened = await opts.repo.openStream({
        id,
        credentialId: r.identity.credential_id,
        orgId: r.identity.organization_id,
        replica,
        max: MAX_STREAMS_PER_CREDENTIAL,
        orgMax: MAX_STREAMS_PER_ORGANIZATION,
        leaseSeconds: LEASE_SECONDS,
      });
      if (opened === "credential")
        throw new AppError(
          "rate_limited",
          `This credential already has ${MAX_STREAMS_PER_CREDENTIAL} live event streams open, the most it may hold; close one first.`,
          { retryAfter: LEASE_SECONDS },
        );
      if (opened === "organization")
        throw new AppError(
          "rate_limited",
          `This organization already has ${MAX_STREAMS_PER_ORGANIZATION} live event streams open across its credentials, the most it may hold; close one first.`,
          { retryAfter: LEASE_SECONDS },
        );
      const s = new Session({
        res: reply.raw,
        org: r.identity.organization_id,
        types: r.query.type === undefined ? null : new Set(r.query.type),
        maxQueued: opts.maxQueued ?? 1_000,
        onEnd: ended,
      });
      sessions.set(s, { id, authorization: req.headers.authorization });
      eventStreamsOpen.inc();
      let first: ReplayEventsOutput | undefined;
      try {
        // Attached before the replay is read: what is published meanwhile is kept for the switch.
        await opts.fanIn.attach(s.org, s);
        if (resume) first = await firstPage(r, resume);
      } catch (e) {
        s.end("error");
        throw e;
      }
      if (!resume) {
        s.lastSent = opts.fanIn.lastSeq();
        s.live = true;
      }
      const expires = r.identity.expires_at ? Date.parse(r.identity.expires_at) - Date.now() : undefined;
      if (expires !== undefined) {
        const held = sessions.get(s);
        if (held) held.expiry = setTimeout(() => s.end("revoked", "the credential has expired"), Math.max(0, Math.min(expires, 2 ** 31 - 1)));
      }
      reply.hijack();
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
      reply.raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "x-accel-buffering": "no" });
      s.started = true;
      // How long an EventSource waits before it reconnects after the stream ends.
      s.raw("retry: 1000\n\n");
      if (req.raw.destroyed) return s.end("client");
      if (first)
        await catchUp(s, r, first).catch((err: unknown) => {
          req.log.warn({ err }, "a resumed stream could not catch up");
          s.end("error", "the stored events could not be read; reconnect with Last-Event-ID to resume");
        });
    },

    get open(): number {
      return sessions.size;
    },

    async stop(): Promise<void> {
      stopping = true;
      clearInterval(heartbeat);
      clearInterval(lease);
      offAuth();
      for (const s of [...sessions.keys()]) s.end("shutdown", "this server is stopping; reconnect with Last-Event-ID to resume on another");
      opts.fanIn.stop();
      await opts.repo.closeReplica(replica).catch((err: unknown) => opts.log.warn({ err }, "could not give back the streams' places"));
    },
  };
}
export type EventStreams = ReturnType<typeof createEventStreams>;
