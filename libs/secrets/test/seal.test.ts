import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DEV_SECRET_KEY, parseSecretKey, sealingKeySetting, secretBox } from "../src/seal.js";

/** How the webhooks service declares its key (libs/outbound settings). */
const webhookSecretKey = sealingKeySetting("WEBHOOK_SECRET_KEY", DEV_SECRET_KEY);

const plaintext = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const keyB64 = () => randomBytes(32).toString("base64");

// Flips one bit of one base64url part of a sealed string and re-encodes it.
function flip(sealed: string, part: 1 | 2, byteIndex: number): string {
  const parts = sealed.split(".");
  const bytes = Buffer.from(parts[part] ?? "", "base64url");
  bytes[byteIndex] = (bytes[byteIndex] ?? 0) ^ 1;
  parts[part] = bytes.toString("base64url");
  return parts.join(".");
}

describe("secretBox", () => {
  it("when a secret is sealed and opened, then the plaintext comes back", () => {
    const box = secretBox(keyB64(), "WEBHOOK_SECRET_KEY");
    const sealed = box.seal(plaintext);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(plaintext);
    expect(box.open(sealed)).toBe(plaintext);
  });

  it("when the same secret is sealed twice, then the sealed strings differ and both open", () => {
    const box = secretBox(keyB64(), "WEBHOOK_SECRET_KEY");
    const a = box.seal(plaintext);
    const b = box.seal(plaintext);
    expect(a).not.toBe(b);
    expect(box.open(a)).toBe(plaintext);
    expect(box.open(b)).toBe(plaintext);
  });

  it("when the iv, the ciphertext or the tag is altered, then open throws", () => {
    const box = secretBox(keyB64(), "WEBHOOK_SECRET_KEY");
    const sealed = box.seal(plaintext);
    const bodyLength = Buffer.from(sealed.split(".")[2] ?? "", "base64url").length;
    expect(() => box.open(flip(sealed, 1, 0))).toThrow(/failed authentication/);
    expect(() => box.open(flip(sealed, 2, 0))).toThrow(/failed authentication/);
    expect(() => box.open(flip(sealed, 2, bodyLength - 1))).toThrow(/failed authentication/);
  });

  it("when the tag is truncated, then open throws", () => {
    const box = secretBox(keyB64(), "WEBHOOK_SECRET_KEY");
    const sealed = box.seal("");
    const [v, iv, body] = sealed.split(".");
    const short = Buffer.from(body ?? "", "base64url")
      .subarray(0, 12)
      .toString("base64url");
    expect(() => box.open(`${v}.${iv}.${short}`)).toThrow(/format/);
  });

  it("when opened under another key, then it throws naming WEBHOOK_SECRET_KEY", () => {
    const sealed = secretBox(keyB64(), "WEBHOOK_SECRET_KEY").seal(plaintext);
    expect(() => secretBox(keyB64(), "WEBHOOK_SECRET_KEY").open(sealed)).toThrow(/WEBHOOK_SECRET_KEY/);
  });

  it("when the sealed string is malformed, then open throws a format error", () => {
    const box = secretBox(keyB64(), "WEBHOOK_SECRET_KEY");
    const sealed = box.seal(plaintext);
    expect(() => box.open("")).toThrow(/format/);
    expect(() => box.open(sealed.replace(/^v1/, "v2"))).toThrow(/format/);
    expect(() => box.open(`${sealed}.x`)).toThrow(/format/);
    expect(() => box.open(sealed.replace(".", ".!"))).toThrow(/format/);
  });
});

describe("parseSecretKey", () => {
  it("when the key is base64, base64url or hex of 32 bytes, then it is accepted", () => {
    const raw = randomBytes(32);
    expect(parseSecretKey(raw.toString("base64"), "WEBHOOK_SECRET_KEY")).toEqual(raw);
    expect(parseSecretKey(raw.toString("base64url"), "WEBHOOK_SECRET_KEY")).toEqual(raw);
    expect(parseSecretKey(raw.toString("hex"), "WEBHOOK_SECRET_KEY")).toEqual(raw);
    expect(parseSecretKey(DEV_SECRET_KEY, "WEBHOOK_SECRET_KEY").toString("ascii")).toBe("tasksvc-DEV-ONLY-webhook-key-000");
  });

  it("when the key is too short, too long or not an encoding, then the error names WEBHOOK_SECRET_KEY", () => {
    for (const bad of ["", "secret", randomBytes(16).toString("base64"), randomBytes(48).toString("base64"), randomBytes(31).toString("hex"), "z".repeat(64)]) {
      expect(() => secretBox(bad, "WEBHOOK_SECRET_KEY"), bad).toThrow(/WEBHOOK_SECRET_KEY must be 64 hex characters or base64 of 32 bytes/);
    }
  });

  it("when sealed with a key in hex, then it opens with the same key in base64", () => {
    const raw = randomBytes(32);
    expect(secretBox(raw.toString("base64"), "WEBHOOK_SECRET_KEY").open(secretBox(raw.toString("hex"), "WEBHOOK_SECRET_KEY").seal(plaintext))).toBe(plaintext);
  });
});

describe("a sealing key of another setting (KEYS_SECRET_KEY)", () => {
  it("when its key is malformed or a sealed string was sealed under another key, then the errors name that setting", () => {
    expect(() => secretBox("short", "KEYS_SECRET_KEY")).toThrow(/^KEYS_SECRET_KEY must be/);
    const sealed = secretBox(keyB64(), "KEYS_SECRET_KEY").seal(plaintext);
    expect(() => secretBox(keyB64(), "KEYS_SECRET_KEY").open(sealed)).toThrow(/another KEYS_SECRET_KEY/);
    const schema = z.object({ KEYS_SECRET_KEY: sealingKeySetting("KEYS_SECRET_KEY", DEV_SECRET_KEY) });
    expect(schema.safeParse({ KEYS_SECRET_KEY: "short" }).error?.issues[0]?.message).toMatch(/^KEYS_SECRET_KEY must be/);
  });
});

describe("webhookSecretKey setting", () => {
  const schema = z.object({ WEBHOOK_SECRET_KEY: webhookSecretKey });

  it("when unset, then the development key is used and flagged", () => {
    expect(schema.parse({}).WEBHOOK_SECRET_KEY).toEqual({ keyMaterial: DEV_SECRET_KEY, isDevKey: true });
  });

  it("when set to a valid key, then it is passed through", () => {
    const key = keyB64();
    expect(schema.parse({ WEBHOOK_SECRET_KEY: key }).WEBHOOK_SECRET_KEY).toEqual({ keyMaterial: key, isDevKey: false });
  });

  it("when set to a bad key, then parsing fails with the named message", () => {
    const r = schema.safeParse({ WEBHOOK_SECRET_KEY: "short" });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/WEBHOOK_SECRET_KEY must be/);
    expect(r.error?.issues[0]?.path).toEqual(["WEBHOOK_SECRET_KEY"]);
  });
});
