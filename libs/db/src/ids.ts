import { randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform random base62 text: bytes ≥ 248 are rejected so that `% 62` has no bias. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Stripe-style opaque ids: a type prefix and 22 random base62 characters (~131 bits). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(22)}`;
}
