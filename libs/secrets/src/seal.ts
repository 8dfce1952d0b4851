import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { z } from "zod";

/** AES-256-GCM, sealed as `v1.<iv>.<ciphertext‖tag>`: the version lets a later key or algorithm add `v2` and still open `v1` rows. */

const VERSION = "v1";
const KEY_BYTES = 32;
// Random 96-bit IVs are safe for far more seals than we store (2^32 per key, NIST SP 800-38D).
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** DEVELOPMENT ONLY, so `make run` works out of the box: it is public, so what it seals is effectively plain text, and a process using it warns. */
export const DEV_SECRET_KEY = "dGFza3N2Yy1ERVYtT05MWS13ZWJob29rLWtleS0wMDA=";

const KEY_FORMAT_HINT = "64 hex characters or base64 of 32 bytes (e.g. `openssl rand -base64 32`)";

/** Both encodings are what `openssl rand` prints, and they cannot be confused. */
export function parseSecretKey(keyMaterial: string, setting: string): Buffer {
  const text = keyMaterial.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (key.length === KEY_BYTES) return key;
  }
  throw new Error(`${setting} must be ${KEY_FORMAT_HINT}; got ${text.length} characters`);
}

export interface SecretBox {
  /** A fresh random IV each time, so sealing the same secret twice gives different strings. */
  seal(plaintext: string): string;
  open(sealed: string): string;
}

export function secretBox(keyMaterial: string, setting: string): SecretBox {
  const key = parseSecretKey(keyMaterial, setting);
  return {
    seal(plaintext) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
      return `${VERSION}.${iv.toString("base64url")}.${body.toString("base64url")}`;
    },
    open(sealed) {
      const parts = sealed.split(".");
      if (parts.length !== 3 || parts[0] !== VERSION) throw new Error(`sealed secret is not in the ${VERSION} format`);
      const iv = strictBase64url(parts[1]);
      const body = strictBase64url(parts[2]);
      if (iv?.length !== IV_BYTES || body === undefined || body.length < TAG_BYTES) {
        throw new Error(`sealed secret is not in the ${VERSION} format`);
      }
      // Without authTagLength GCM accepts a truncated tag, which makes forgery far cheaper.
      const decipher = createDecipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
      } catch (cause) {
        // The only failure here is authentication; never echo data.
        throw new Error(`sealed secret failed authentication: altered, or sealed under another ${setting}`, { cause });
      }
    },
  };
}

// Node's base64url decoder silently skips stray characters; a tampered string must not "decode".
function strictBase64url(text: string | undefined): Buffer | undefined {
  if (text === undefined || !/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}

/** Unset falls back to `devKey` with `isDevKey: true`, so the process can warn. */
export function sealingKeySetting(setting: string, devKey: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return { keyMaterial: devKey, isDevKey: true };
      try {
        parseSecretKey(value, setting);
      } catch (e) {
        ctx.addIssue({ code: "custom", message: e instanceof Error ? e.message : String(e) });
        return z.NEVER;
      }
      return { keyMaterial: value, isDevKey: false };
    });
}
