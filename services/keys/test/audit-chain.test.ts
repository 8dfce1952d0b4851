import { createHash } from "node:crypto";
import type { AuditMessage } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { chainHash, sealedEvent, servedWithoutHash } from "../src/domain/audit-chain.js";

const ZEROS = "0".repeat(64);
const message: AuditMessage = {
  id: "aud_1",
  organization_id: "org_1",
  action: "member.role_changed",
  actor: { type: "api_key", id: "key_1", user_id: "usr_1" },
  target: { type: "member", id: "usr_2" },
  changes: { role: { from: "member", to: "admin" }, note: { from: null, to: "é\u2028😀" }, limit: { from: 1e21, to: 0.5 } },
  request_id: "req_1",
  ip: "203.0.113.7",
  user_agent: "curl/8.5.0",
  created_at: "2026-11-23T09:30:00.000Z",
};

describe("the audit chain's hash", () => {
  it("when an event is hashed, then it is SHA-256 of prev_hash and its RFC 8785 form: members sorted, no spaces, numbers and text as ECMAScript writes them", () => {
    const event = servedWithoutHash(message, 7, ZEROS);
    // Written out by hand from RFC 8785: keys in UTF-16 order at every level, strings unescaped but for JSON's own.
    const canonical =
      '{"action":"member.role_changed","actor":{"id":"key_1","type":"api_key","user_id":"usr_1"},' +
      '"changes":{"limit":{"from":1e+21,"to":0.5},"note":{"from":null,"to":"é\u2028😀"},"role":{"from":"member","to":"admin"}},' +
      '"created_at":"2026-11-23T09:30:00.000Z","id":"aud_1","ip":"203.0.113.7","prev_hash":"' +
      ZEROS +
      '","request_id":"req_1","sequence":7,"target":{"id":"usr_2","type":"member"},"user_agent":"curl/8.5.0"}';
    expect(chainHash(ZEROS, event)).toBe(
      createHash("sha256")
        .update(ZEROS + canonical, "utf8")
        .digest("hex"),
    );
  });

  it("when an event is sealed, then the stored text is the served event, the organization left out, and its hash verifies", () => {
    const prev = "a".repeat(64);
    const { hash, body } = sealedEvent(message, 8, prev);
    const served = JSON.parse(body) as Record<string, unknown>;
    expect(Object.keys(served)).toEqual([
      "id",
      "sequence",
      "action",
      "actor",
      "target",
      "changes",
      "request_id",
      "ip",
      "user_agent",
      "created_at",
      "prev_hash",
      "hash",
    ]);
    expect(served["hash"]).toBe(hash);
    const { hash: _, ...rest } = served;
    expect(chainHash(prev, rest as never)).toBe(hash);
    // Any change to what was hashed gives another hash.
    expect(chainHash(prev, { ...(rest as never as ReturnType<typeof servedWithoutHash>), sequence: 9 })).not.toBe(hash);
  });
});
