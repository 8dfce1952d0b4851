import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { components } from "./schema.js";

type StreamedEvent = components["schemas"]["Event"];
type Problem = components["schemas"]["Problem"];
/** An event's type: `task.created`, `task.updated`, `task.archived`, `task.due_soon`, `task.overdue`, or an endpoint's `webhook_endpoint.disabled` or `webhook_endpoint.enabled`. */
export type EventType = StreamedEvent["type"];

export interface EventStreamOptions {
  /** Only these types of event (all of them by default). */
  types?: EventType[];
  /** Start after this event id: the events after it first, then the live ones. */
  after?: string;
  /** Aborting it ends the stream: the loop over it ends without an error. */
  signal?: AbortSignal;
  /**
   * First wait before a reconnect in ms (default 500). It doubles with every failed connect, up to
   * the client's `maxDelayMs`, and starts again from here after a connect that succeeds.
   */
  reconnectDelayMs?: number;
}

export interface EventStreamContext {
  baseUrl: string;
  token: string;
  fetch: typeof fetch;
  maxDelayMs: number;
  maxRetryAfterMs: number;
  retryAfterMs: (value: string | null) => number | null;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  problemError: (response: Response, problem: Partial<Problem>) => Error;
}

/**
 * The events of `GET /v1/events/stream`, one connection after the other, each resuming with
 * `Last-Event-ID` after the last event yielded. A 5xx or 429 is tried again after its Retry-After
 * (or a backoff); any other error answer throws its problem.
 */
export async function* streamEvents(ctx: EventStreamContext, options: EventStreamOptions = {}): AsyncGenerator<StreamedEvent> {
  const url = new URL(`${ctx.baseUrl.replace(/\/+$/, "")}/v1/events/stream`);
  if (options.types !== undefined && options.types.length > 0) url.searchParams.set("type", options.types.join(","));
  if (options.after !== undefined) url.searchParams.set("after", options.after);
  // A browser's fetch throws when called as a method of another object.
  const fetchFn = ctx.fetch;
  const firstDelay = Math.max(0, options.reconnectDelayMs ?? 500);
  const maxDelay = Math.max(ctx.maxDelayMs, firstDelay);
  let delay = firstDelay;
  let lastId = options.after;
  let reconnect = false;

  // Leaving the loop (break, return, a throw) aborts it too, which cancels the open body.
  const outer = options.signal;
  if (outer?.aborted) return;
  const controller = new AbortController();
  const signal = controller.signal;
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  const wait = async (ms: number): Promise<boolean> => {
    try {
      await ctx.sleep(ms, signal);
      return true;
    } catch {
      return false;
    }
  };
  const backoff = (): number => {
    const ms = delay;
    delay = Math.min(delay * 2, maxDelay);
    return ms;
  };

  try {
    for (; ; reconnect = true) {
      const headers: Record<string, string> = { authorization: `Bearer ${ctx.token}`, accept: "text/event-stream" };
      if (reconnect && lastId !== undefined) headers["last-event-id"] = lastId;
      let res: Response;
      try {
        res = await fetchFn(url, { headers, signal });
      } catch {
        // The server may be restarting; not retried when it was our abort.
        if (signal.aborted || !(await wait(backoff()))) return;
        continue;
      }

      if (res.status !== 200) {
        let ms: number;
        try {
          ms = await afterFailedConnect(ctx, res, backoff);
        } catch (e) {
          if (signal.aborted) return;
          throw e;
        }
        if (!(await wait(ms))) return;
        continue;
      }
      const type = res.headers.get("content-type") ?? "";
      if (!/^text\/event-stream\b/i.test(type) || res.body === null) {
        await res.body?.cancel().catch(() => undefined);
        throw new Error(`GET /v1/events/stream answered 200 with content-type "${type}", not an event stream`);
      }

      delay = firstDelay;
      const body = res.body.getReader();
      reader = body;
      const messages: EventSourceMessage[] = [];
      // Comments (keep-alives) have no callback.
      const parser = createParser({ onEvent: (m) => messages.push(m) });
      const decoder = new TextDecoder();
      for (;;) {
        let chunk: Awaited<ReturnType<typeof body.read>>;
        try {
          chunk = await body.read();
        } catch {
          if (signal.aborted) return;
          break;
        }
        if (chunk.done) break;
        parser.feed(decoder.decode(chunk.value, { stream: true }));
        for (let m = messages.shift(); m !== undefined; m = messages.shift()) {
          const event = parseEvent(m);
          if (signal.aborted) return;
          lastId = m.id ?? event.id;
          yield event;
        }
      }
      reader = undefined;
      // The server ended the stream (shutting down, or this client fell behind).
      if (signal.aborted || !(await wait(backoff()))) return;
    }
  } finally {
    outer?.removeEventListener("abort", onAbort);
    await reader?.cancel().catch(() => undefined);
    controller.abort();
  }
}

/** Any answer a reconnect would not change (a 4xx, or a 429 asking for longer than `maxRetryAfterMs`) throws its problem. */
async function afterFailedConnect(ctx: EventStreamContext, res: Response, backoff: () => number): Promise<number> {
  const after = ctx.retryAfterMs(res.headers.get("retry-after"));
  if (res.status >= 500 || (res.status === 429 && (after === null || after <= ctx.maxRetryAfterMs))) {
    await res.body?.cancel().catch(() => undefined);
    const next = backoff();
    if (after === null) return next;
    // A connect before a 429's Retry-After is another 429, so that wait is not capped.
    return res.status === 429 ? after : Math.min(after, ctx.maxDelayMs);
  }
  const problem = (await res.json().catch(() => null)) as unknown;
  throw ctx.problemError(res, typeof problem === "object" && problem !== null ? (problem as Partial<Problem>) : {});
}

function parseEvent(m: EventSourceMessage): StreamedEvent {
  try {
    return JSON.parse(m.data) as StreamedEvent;
  } catch {
    throw new Error(`GET /v1/events/stream sent a message that is not JSON (id ${m.id ?? "none"}, event ${m.event ?? "none"})`);
  }
}
