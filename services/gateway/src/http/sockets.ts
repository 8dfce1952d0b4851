import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

const LINGER_MS = 5000;

/**
 * RFC 9112 section 9.6: closing at once would make the kernel reset the client's next writes, and
 * a client whose write fails (Node's, for one) may never read the answer that already arrived.
 */
export function lingeringClose(socket: Duplex, last?: string): void {
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  let flushed = false;
  let clientEnded = false;
  socket.once("close", () => clearTimeout(timer));
  socket.once("end", () => {
    clientEnded = true;
    if (flushed) socket.destroy();
  });
  socket.end(last, () => {
    flushed = true;
    if (clientEnded) socket.destroy();
  });
  // A socket no parser reads any more is drained here.
  socket.resume();
}

/** When the body was not all read (fastify's 413 answers at once and closes), that close lingers too. */
export function lingerWhenUnread(socket: Socket, req: () => IncomingMessage | undefined): void {
  const destroySoon = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    const r = req();
    if (r !== undefined && !r.complete && socket.writable) lingeringClose(socket);
    else destroySoon();
  };
}
