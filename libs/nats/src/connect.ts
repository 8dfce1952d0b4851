import { StartupError } from "@tasksvc/config";
import { connect, type NatsConnection } from "@nats-io/transport-node";

export type { NatsConnection };
export { connect };

export class NatsUnreachableError extends StartupError {
  constructor(url: string, cause: unknown) {
    super(
      `cannot reach NATS at NATS_URL=${url} (${cause instanceof Error ? cause.message : String(cause)}): start nats-server with JetStream (-js) or set NATS_URL`,
    );
  }
}

export interface ConnectOptions {
  url: string;
  name: string;
}

/**
 * Connects once; a server that is down at start is a configuration problem, reported with the
 * setting to fix. Once connected the client reconnects forever (services outlive NATS restarts).
 */
export async function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  try {
    return await connect({
      servers: opts.url.split(",").map((s) => s.trim()),
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 5000,
      // nats.js otherwise builds an Error (with a stack) for every request up front, in case it
      // times out: ~7% of the gateway's CPU under load. Our timeouts carry their own context.
      noAsyncTraces: true,
    });
  } catch (e) {
    throw new NatsUnreachableError(opts.url, e);
  }
}

/** NATS's own default max_payload: what a connection that has not told us yet is assumed to carry. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * The bytes of items one page may carry in a reply on this connection (DESIGN 20, Size): the
 * server's max_payload, read at connect, less room for what wraps the items (the reply's framing,
 * the page's fields and cursor, the headers) and for the small gap between a page's measured
 * size and its encoding. An eighth, at most 64 KiB, so a server with a small limit still gets pages.
 */
export function pageBudget(nc: Pick<NatsConnection, "info">): number {
  const max = nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  return max - Math.min(64 * 1024, Math.floor(max / 8));
}
