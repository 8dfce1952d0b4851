const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

export const REQUEST_ID_HEADER = "X-Request-Id";
