import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newSigningSecret, secretBytes, signatureHeader, unixSeconds, webhookHeaders } from "../src/signing.js";

// The reference verifier rejects timestamps more than 5 minutes from its clock, so sign "now".
const now = () => unixSeconds(new Date());

// A body as the contracts' webhookBody() builds it (its own tests are there): signing takes text.
const body = JSON.stringify({
  type: "task.updated",
  timestamp: "2025-01-02T03:04:05.678Z",
  data: { id: "tsk_1", title: 'Ünïcode ✓ "quoted"', tags: ["a", "b"] },
});

function verifies(secret: string, body: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

describe("newSigningSecret", () => {
  it("when a secret is generated, then it is whsec_ plus base64 of 32 bytes and the reference library accepts it", () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secretBytes(secret)).toHaveLength(32);
    expect(() => new Webhook(secret)).not.toThrow();
  });

  it("when two secrets are generated, then they differ", () => {
    expect(newSigningSecret()).not.toBe(newSigningSecret());
  });
});

describe("secretBytes", () => {
  it("when the prefix is missing, then it throws", () => {
    expect(() => secretBytes(Buffer.alloc(32).toString("base64"))).toThrow(/whsec_/);
  });

  it("when the base64 has stray characters, then it throws", () => {
    expect(() => secretBytes(`whsec_${Buffer.alloc(32).toString("base64")}!`)).toThrow(/base64/);
  });

  it("when the key is shorter than 24 bytes, then it throws", () => {
    expect(() => secretBytes(`whsec_${Buffer.alloc(16).toString("base64")}`)).toThrow(/24 to 64 bytes, got 16/);
  });
});

describe("signatureHeader and webhookHeaders", () => {
  it("when signed with one secret, then the reference verifier accepts the message", () => {
    const secret = newSigningSecret();
    const headers = webhookHeaders({ id: "evt_01", timestamp: now(), body, secrets: [secret] });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(headers["content-type"]).toBe("application/json");
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it("when headers are built, then they carry the stable User-Agent tasksvc-webhooks/1.0, outside what is signed", () => {
    const secret = newSigningSecret();
    const headers = webhookHeaders({ id: "evt_ua", timestamp: now(), body, secrets: [secret] });
    expect(headers["user-agent"]).toBe("tasksvc-webhooks/1.0");
    expect(verifies(secret, body, { ...headers, "user-agent": "something else" })).toBe(true);
  });

  it("when signed during a rotation, then one signature per secret is sent, current first, and each secret alone verifies", () => {
    const current = newSigningSecret();
    const previous = newSigningSecret();
    const timestamp = now();
    const headers = webhookHeaders({ id: "evt_02", timestamp, body, secrets: [current, previous] });
    const parts = headers["webhook-signature"].split(" ");
    expect(parts).toHaveLength(2);
    expect(parts[0]).toBe(signatureHeader([current], "evt_02", timestamp, body));
    expect(parts[1]).toBe(signatureHeader([previous], "evt_02", timestamp, body));
    expect(verifies(current, body, { ...headers })).toBe(true);
    expect(verifies(previous, body, { ...headers })).toBe(true);
    expect(verifies(newSigningSecret(), body, { ...headers })).toBe(false);
  });

  it("when the body, timestamp or id is altered after signing, then the reference verifier rejects it", () => {
    const secret = newSigningSecret();
    const timestamp = now();
    const headers = { ...webhookHeaders({ id: "evt_03", timestamp, body, secrets: [secret] }) };
    expect(verifies(secret, body, headers)).toBe(true);
    expect(verifies(secret, body.replace("task.updated", "task.deleted"), headers)).toBe(false);
    expect(verifies(secret, `${body} `, headers)).toBe(false);
    expect(verifies(secret, body, { ...headers, "webhook-timestamp": String(timestamp - 1) })).toBe(false);
    expect(verifies(secret, body, { ...headers, "webhook-id": "evt_04" })).toBe(false);
  });

  it("when the signed string is known, then the signature is HMAC-SHA256 of id.timestamp.body under the decoded key", () => {
    // Computed independently of our code by the reference library's own signer.
    const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    const expected = new Webhook(secret).sign("evt_05", new Date(1_700_000_000_000), "{}");
    expect(signatureHeader([secret], "evt_05", 1_700_000_000, "{}")).toBe(expected);
  });

  it("when there is no live secret, a fractional timestamp or an id with whitespace, then signing throws", () => {
    expect(() => signatureHeader([], "evt_06", 1, "{}")).toThrow(/at least one/);
    expect(() => signatureHeader([newSigningSecret()], "evt_06", 1.5, "{}")).toThrow(/unix seconds/);
    expect(() => signatureHeader([newSigningSecret()], "evt 06", 1, "{}")).toThrow(/webhook-id/);
    expect(() => signatureHeader([newSigningSecret()], "", 1, "{}")).toThrow(/webhook-id/);
  });
});
