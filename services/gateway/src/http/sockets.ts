import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

/** How long a refused connection is still read (and what arrives dropped) after its answer. */
const LINGER_MS = 5000;

/**
 * Closes a connection the way RFC 9112 (section 9.6) asks of a server that answers before reading
 * the whole request: our side ends (FIN) after what was written, and what the client still sends
 * is read and dropped until it ends too, or for LINGER_MS at most. Closing at once would make the
 * kernel reset the client's next writes, and a client whose write fails (Node's, for one) may never
 * read the answer that already arrived.
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
  // Node's HTTP server keeps feeding the parser, which drops the bytes; a socket no parser reads
  // any more is drained here.
  socket.resume();
}

/**
 * Node closes a connection whose answer said `Connection: close` with `destroySoon()` once the
 * answer is out. When the request's body was not all read (fastify's 413 for a body past the
 * limit answers at once and closes), that close lingers too.
 */
export function lingerWhenUnread(socket: Socket, req: () => IncomingMessage | undefined): void {
  const destroySoon = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    const r = req();
    if (r !== undefined && !r.complete && socket.writable) lingeringClose(socket);
    else destroySoon();
  };
}
