import { connect, type Socket } from "node:net";

/** One response as written on the wire. */
export interface WireResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Splits what a server wrote into responses, each framed by its Content-Length (the answers the
 * gateway writes always carry one; a 304 has none and no body). What follows an incomplete one
 * is left out.
 */
export function parseWire(buf: Buffer): WireResponse[] {
  const out: WireResponse[] = [];
  let at = 0;
  while (at < buf.length) {
    const end = buf.indexOf("\r\n\r\n", at);
    if (end === -1) break;
    const [statusLine = "", ...lines] = buf.subarray(at, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"] ?? 0);
    if (end + 4 + length > buf.length) break;
    out.push({ status: Number(statusLine.split(" ")[1]), headers, body: buf.subarray(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

/** A raw connection: what it received so far, and promises for the server's end and the close. */
export function rawConnection(port: number): { socket: Socket; received: () => Buffer; ended: Promise<void>; closed: Promise<void>; errors: string[] } {
  const socket = connect({ host: "127.0.0.1", port, allowHalfOpen: true });
  const chunks: Buffer[] = [];
  const errors: string[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  socket.on("error", (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
  const ended = new Promise<void>((r) => socket.once("end", () => r()));
  const closed = new Promise<void>((r) => socket.once("close", () => r()));
  return { socket, received: () => Buffer.concat(chunks), ended, closed, errors };
}

/** Resolves once `check` holds for what the connection received (checked on every chunk). */
export function until(socket: Socket, received: () => Buffer, check: (b: Buffer) => boolean): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const b = received();
      if (check(b)) {
        socket.off("data", look);
        socket.off("close", closedFirst);
        resolve(b);
      }
    };
    const closedFirst = () => {
      look();
      reject(new Error(`the connection closed first; received: ${received().toString("latin1").slice(0, 500)}`));
    };
    socket.on("data", look);
    socket.once("close", closedFirst);
    look();
  });
}

export const portOf = (address: ReturnType<import("node:net").Server["address"]>): number =>
  typeof address === "object" && address !== null ? address.port : 0;
