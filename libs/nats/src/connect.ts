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

/** A server down at start is a configuration problem; once connected the client reconnects for ever. */
export async function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  try {
    return await connect({
      servers: opts.url.split(",").map((s) => s.trim()),
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: 5000,
      // nats.js otherwise builds an Error with a stack for every request in case it times out: ~7% of the gateway's CPU under load.
      noAsyncTraces: true,
    });
  } catch (e) {
    throw new NatsUnreachableError(opts.url, e);
  }
}

/** Assumed for a connection that has not told us yet. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * The server's max_payload less room for what wraps the items (framing, page fields, cursor,
 * headers): an eighth, at most 64 KiB, so a server with a small limit still gets pages.
 */
export function pageBudget(nc: Pick<NatsConnection, "info">): number {
  const max = nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  return max - Math.min(64 * 1024, Math.floor(max / 8));
}
