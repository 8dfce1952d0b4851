import { RawJson, type ReplyHeaders } from "@tasksvc/contracts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

export const REQUEST_ID_HEADER = "X-Request-Id";

export const REPLY_HEADER_NAMES: { readonly [K in keyof Required<ReplyHeaders>]: string } = { etag: "ETag" };
export const REPLY_HEADER_KEYS = Object.keys(REPLY_HEADER_NAMES) as readonly (keyof ReplyHeaders)[];

/** Error details carry caller input, and the client throws on CR or LF: an id with a line feed once made `msg.respond` throw and the process exit. */
export function headerSafe(value: string, max = 256): string {
  let out = "";
  for (const ch of value) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x20 || c === 0x7f) out += " ";
    else if (c < 0x80) out += ch;
    else if (c >= 0xd800 && c <= 0xdfff)
      out += "%EF%BF%BD"; // a lone surrogate: U+FFFD
    else out += encodeURIComponent(ch);
    if (out.length >= max) break;
  }
  return out.slice(0, max).trim();
}

const OK_PREFIX = Buffer.from('{"ok":true,"data":');

/** Without parsing them; undefined for any other reply (an error). */
export function okReplyData(reply: Uint8Array): Buffer | undefined {
  const buf = Buffer.from(reply.buffer, reply.byteOffset, reply.byteLength);
  if (buf.length <= OK_PREFIX.length || buf[buf.length - 1] !== 0x7d) return undefined;
  if (buf.compare(OK_PREFIX, 0, OK_PREFIX.length, 0, OK_PREFIX.length) !== 0) return undefined;
  return buf.subarray(OK_PREFIX.length, buf.length - 1);
}

const OK_SUFFIX = Buffer.from("}");

export function encodeOkReply(data: unknown): Uint8Array {
  if (data instanceof RawJson) return Buffer.concat([OK_PREFIX, data.bytes, OK_SUFFIX]);
  return encoder.encode(`{"ok":true,"data":${JSON.stringify(data ?? null)}}`);
}
