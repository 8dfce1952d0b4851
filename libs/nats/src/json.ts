const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

export const REQUEST_ID_HEADER = "X-Request-Id";

/**
 * A header value that can never break the NATS wire format or the client's validation (which
 * throws on CR or LF): control characters become spaces, non-ASCII is percent-encoded, and the
 * value is cut to `max` characters. Error details carry caller input (issue 9: an id with a line
 * feed once made `msg.respond` throw and the process exit).
 */
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
