import { randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// Random bytes are drawn 4 KiB at a time: one randomBytes() call costs about as much for 44 bytes
// as for 4 KiB, and a busy service mints an id per row (a fan-out, ten per event).
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

function randomByte(): number {
  if (offset >= pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  return pool[offset++] as number;
}

/** Uniform random base62 text: bytes ≥ 248 are rejected so that `% 62` has no bias. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += BASE62[b % 62];
  }
  return out;
}

/** Stripe-style opaque ids: a type prefix and 22 random base62 characters (~131 bits). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(22)}`;
}
