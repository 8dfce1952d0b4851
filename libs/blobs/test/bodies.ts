import { createHash } from "node:crypto";
import { Readable } from "node:stream";

/** Shared by the store tests: checksums and bodies as sockets deliver them. */
export const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A body arriving in pieces, as a socket delivers it. */
export const pieces = (b: Buffer, size = 64 * 1024) =>
  Readable.from(
    (function* () {
      for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
    })(),
  );

export async function read(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
