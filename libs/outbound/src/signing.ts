import { createHmac, randomBytes } from "node:crypto";

/** Standard Webhooks signing; the body is the exact text sent, built once and stored. */

export const SECRET_PREFIX = "whsec_";

// The spec asks for 24 to 64 random bytes; past SHA-256's 32 a longer key adds no strength.
const SECRET_BYTES = 32;
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/** Strict, because a secret that decodes loosely would sign with a key the receiver's library decodes differently. */
export function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error(`a webhook signing secret starts with ${SECRET_PREFIX}`);
  const encoded = secret.slice(SECRET_PREFIX.length);
  const bytes = Buffer.from(encoded, "base64");
  // Node's decoder skips characters outside the alphabet; re-encoding catches that.
  if (bytes.toString("base64") !== encoded) throw new Error("a webhook signing secret is whsec_ followed by standard base64");
  if (bytes.length < MIN_SECRET_BYTES || bytes.length > MAX_SECRET_BYTES) {
    throw new Error(`a webhook signing secret holds ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes, got ${bytes.length}`);
  }
  return bytes;
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", secretBytes(secret)).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64");
  return `v1,${mac}`;
}

/** During a rotation both secrets are live, so a receiver holding either one verifies. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  if (secrets.length === 0) throw new Error("signing needs at least one live secret");
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new Error("webhook-timestamp is whole unix seconds");
  // The id is also a header value: the HTTP client would refuse whitespace or controls after we signed it.
  if (id === "" || /[\s\p{Cc}]/u.test(id)) throw new Error("webhook-id must be non-empty, without whitespace or control characters");
  return secrets.map((s) => sign(s, id, timestamp, body)).join(" ");
}

export interface WebhookHeadersInput {
  id: string;
  /** The same value that is signed. */
  timestamp: number;
  body: string;
  /** Current first. */
  secrets: readonly string[];
}

/** Its version is the wire format's, changed only when receivers must know about a change. */
export const WEBHOOK_USER_AGENT = "tasksvc-webhooks/1.0";

export interface WebhookHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
  "content-type": "application/json";
  "user-agent": typeof WEBHOOK_USER_AGENT;
}

export function webhookHeaders(input: WebhookHeadersInput): WebhookHeaders {
  return {
    "webhook-id": input.id,
    "webhook-timestamp": String(input.timestamp),
    "webhook-signature": signatureHeader(input.secrets, input.id, input.timestamp, input.body),
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
  };
}

/** Receivers reject values outside ±5 min of now. */
export function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}
