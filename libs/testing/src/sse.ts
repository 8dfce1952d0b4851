import { request as httpRequest, type IncomingMessage } from "node:http";

export interface SseMessage {
  id: string;
  event: string;
  data: string;
  /** performance.now() when it arrived. */
  at: number;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage["headers"];
  /** When status is not 200. */
  problem: unknown;
  messages: SseMessage[];
  comments: string[];
  /** The server ended the stream or the connection broke. */
  readonly ended: boolean;
  /** 1-based; rejects if the stream ends first. */
  nth(n: number, timeoutMs?: number): Promise<SseMessage>;
  closed(timeoutMs?: number): Promise<void>;
  /** As a client that goes away. */
  close(): void;
}

export interface SseOptions {
  token: string;
  lastEventId?: string;
  onMessage?: (m: SseMessage) => void;
}

/** node:http, so the test holds the socket and can cut it at an exact message. */
export function openSse(url: string, opts: SseOptions): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, accept: "text/event-stream" };
    if (opts.lastEventId !== undefined) headers["last-event-id"] = opts.lastEventId;
    const req = httpRequest(url, { headers, agent: false });
    req.on("error", reject);
    req.on("response", (res) => {
      const messages: SseMessage[] = [];
      const comments: string[] = [];
      let ended = false;
      const waiters = new Set<() => void>();
      const wake = () => {
        for (const w of waiters) w();
      };
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        problem: undefined,
        messages,
        comments,
        get ended() {
          return ended;
        },
        nth: (n, timeoutMs = 30_000) =>
          waitFor(
            () => messages[n - 1] ?? (ended ? new Error(`the stream ended after ${messages.length} messages, before message ${n}`) : undefined),
            timeoutMs,
          ),
        closed: (timeoutMs = 30_000) => waitFor(() => (ended ? true : undefined), timeoutMs).then(() => undefined),
        close: () => {
          req.destroy();
        },
      };
      function waitFor<T>(probe: () => T | Error | undefined, timeoutMs: number): Promise<T> {
        return new Promise((res2, rej) => {
          const check = () => {
            const v = probe();
            if (v === undefined) return false;
            waiters.delete(check);
            clearTimeout(timer);
            if (v instanceof Error) rej(v);
            else res2(v);
            return true;
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            rej(new Error(`timed out after ${timeoutMs} ms with ${messages.length} messages`));
          }, timeoutMs);
          if (!check()) waiters.add(check);
        });
      }
      const finish = () => {
        ended = true;
        wake();
      };
      res.on("end", finish);
      res.on("close", finish);
      res.on("error", finish);
      if (stream.status !== 200) {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          try {
            stream.problem = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          } catch {
            stream.problem = Buffer.concat(chunks).toString("utf8");
          }
          resolve(stream);
        });
        return;
      }
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const m: SseMessage = { id: "", event: "message", data: "", at: performance.now() };
          let isMessage = false;
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comments.push(line.slice(1).trim());
            else if (line.startsWith("id: ")) m.id = line.slice(4);
            else if (line.startsWith("event: ")) m.event = line.slice(7);
            else if (line.startsWith("data: ")) {
              m.data = line.slice(6);
              isMessage = true;
            }
          }
          if (isMessage) {
            messages.push(m);
            opts.onMessage?.(m);
          }
        }
        wake();
      });
      resolve(stream);
    });
    req.end();
  });
}
