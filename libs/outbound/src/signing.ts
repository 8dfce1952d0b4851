import { createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/, DESIGN §5).
 * Pure functions: the caller supplies the id, the timestamp, the live secrets in plain text and
 * the body as the exact text sent (built once, by the contracts' webhookBody, and stored).
 */

export const SECRET_PREFIX = "whsec_";

// The spec asks for secrets of 24 to 64 random bytes; 32 matches SHA-256's output size, so a
// longer key adds no strength, and it is what the spec's reference libraries generate.
const SECRET_BYTES = 32;
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

/** A new signing secret, `whsec_` + standard base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/**
 * The HMAC key inside a `whsec_` secret. Strict (prefix, canonical base64, 24-64 bytes) because a
 * secret that decodes loosely would sign with a key the receiver's library decodes differently.
 */
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

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for one secret. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", secretBytes(secret)).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64");
  return `v1,${mac}`;
}

/**
 * The `webhook-signature` value: one signature per live secret, space separated, current first.
 * During a rotation both old and new secrets are live, so a receiver holding either one verifies.
 */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  if (secrets.length === 0) throw new Error("signing needs at least one live secret");
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new Error("webhook-timestamp is whole unix seconds");
  // The id travels as a header value too: whitespace or control characters would be rejected by
  // the HTTP client (or split the header), after we had signed something the receiver never sees.
  if (id === "" || /[\s\p{Cc}]/u.test(id)) throw new Error("webhook-id must be non-empty, without whitespace or control characters");
  return secrets.map((s) => sign(s, id, timestamp, body)).join(" ");
}

export interface WebhookHeadersInput {
  id: string;
  /** Unix seconds, the same value that is signed. */
  timestamp: number;
  body: string;
  /** Live secrets in plain text, current first. */
  secrets: readonly string[];
}

/**
 * The User-Agent of every outbound webhook call, so a receiver (or its firewall) can tell ours
 * from other traffic. Its version is the wire format's, not a release's: it changes only when
 * the envelope or the headers change in a way a receiver must know about.
 */
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

/** Unix seconds for `webhook-timestamp`; the spec's receivers reject values outside ±5 min of now. */
export function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}
