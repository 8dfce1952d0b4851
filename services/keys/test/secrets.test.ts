import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashKey, keyPrefix, mintKeySecret } from "../src/domain/secrets.js";

describe("key secrets", () => {
  it("when live, test and legacy keys are minted, then each has its documented form", () => {
    expect(mintKeySecret("live")).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
    expect(mintKeySecret("test")).toMatch(/^svc_test_[0-9A-Za-z]{43}$/);
    expect(mintKeySecret("legacy")).toMatch(/^svc_[0-9A-Za-z]{40}$/);
  });

  it("when many keys are minted, then none repeats", () => {
    const n = 2000;
    expect(new Set(Array.from({ length: n }, () => mintKeySecret("live"))).size).toBe(n);
  });

  it("when a key is hashed, then it is the hex SHA-256 of the whole secret", () => {
    expect(hashKey("svc_live_abc")).toBe(createHash("sha256").update("svc_live_abc").digest("hex"));
  });

  it("when a prefix is taken, then it is the first 12 characters and never the secret", () => {
    const s = mintKeySecret("live");
    expect(keyPrefix(s)).toBe(s.slice(0, 12));
    expect(keyPrefix(s).length).toBeLessThan(s.length);
  });
});
