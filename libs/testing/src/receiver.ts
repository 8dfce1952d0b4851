import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** Checked with the reference verifier (`standardwebhooks`). */
export interface Received {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  event: { type: string; timestamp: string; data: Record<string, unknown>; test?: unknown };
  /** "" when none was sent. */
  userAgent: string;
  /** Indexes into `expect(path, secrets)` of the secrets that verified it on their own. */
  verifiedBy: number[];
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string> } | { hold: true };

export interface Receiver {
  url(path: string): string;
  /** Current first; unknown paths verify with none. */
  expect(path: string, secrets: string[]): void;
  /** Registers the URL through `create` and expects its secret on that path. */
  endpoint<E extends { secret: string }>(create: (url: string) => Promise<E>): Promise<E & { path: string }>;
  /** Default 200; `n` is the request's number on the path (1-based). */
  answer(path: string, fn: (n: number, r: Received) => Answer): void;
  received(path: string): Received[];
  waitFor(path: string, n: number, timeoutMs?: number): Promise<Received[]>;
  holding(path: string): number;
  release(status?: number): void;
  close(): Promise<void>;
}

/** Every request is verified with `standardwebhooks`, the reference implementation, never with our own signing code. */
export async function startReceiver(): Promise<Receiver> {
  const secrets = new Map<string, string[]>();
  const answers = new Map<string, (n: number, r: Received) => Answer>();
  const got = new Map<string, Received[]>();
  const held = new Map<string, Set<http.ServerResponse>>();
  const waiters = new Set<() => void>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const body = Buffer.concat(chunks).toString("utf8");
      const header = (name: string) => String(req.headers[name] ?? "");
      const headers = {
        "webhook-id": header("webhook-id"),
        "webhook-timestamp": header("webhook-timestamp"),
        "webhook-signature": header("webhook-signature"),
      };
      const verifiedBy: number[] = [];
      (secrets.get(path) ?? []).forEach((secret, i) => {
        try {
          new Webhook(secret).verify(body, headers);
          verifiedBy.push(i);
        } catch {}
      });
      let event: Received["event"] = { type: "", timestamp: "", data: {} };
      try {
        event = JSON.parse(body) as Received["event"];
      } catch {
        // Kept as received; the test sees an empty event.
      }
      const r: Received = {
        path,
        id: headers["webhook-id"],
        timestamp: headers["webhook-timestamp"],
        signature: headers["webhook-signature"],
        body,
        event,
        verifiedBy,
        userAgent: header("user-agent"),
        at: Date.now(),
      };
      const list = got.get(path) ?? [];
      list.push(r);
      got.set(path, list);
      for (const w of [...waiters]) w();
      const a = answers.get(path)?.(list.length, r) ?? { status: 200 };
      if ("hold" in a) {
        const set = held.get(path) ?? new Set();
        set.add(res);
        held.set(path, set);
        res.on("close", () => set.delete(res));
        return;
      }
      res.writeHead(a.status, a.headers);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const receiver: Receiver = {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    expect: (path, s) => void secrets.set(path, s),
    async endpoint(create) {
      const path = `/${randomUUID()}`;
      const created = await create(`http://127.0.0.1:${port}${path}`);
      secrets.set(path, [created.secret]);
      return { ...created, path };
    },
    answer: (path, fn) => void answers.set(path, fn),
    received: (path) => [...(got.get(path) ?? [])],
    holding: (path) => held.get(path)?.size ?? 0,
    waitFor(path, n, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const list = got.get(path) ?? [];
          if (list.length < n) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve([...list]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${path}: ${got.get(path)?.length ?? 0} of ${n} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    release(status = 200) {
      for (const set of held.values()) {
        for (const res of set) {
          if (!res.headersSent) res.writeHead(status).end();
        }
        set.clear();
      }
    },
    async close() {
      receiver.release(503);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}
