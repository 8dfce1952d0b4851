import { parseConfig } from "@tasksvc/config";
import { describe, expect, it } from "vitest";
import { WebhooksConfig } from "../src/service.js";

// Issue 11 item 7: every webhook setting is validated at start; a bad value names itself.
const fail = (schema: Parameters<typeof parseConfig>[0], env: Record<string, string>) => {
  try {
    parseConfig(schema, env);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  throw new Error("expected the settings to be refused");
};

describe("webhook settings", () => {
  it("when unset, then the defaults of DESIGN.md 6 apply", () => {
    const w = parseConfig(WebhooksConfig, {});
    expect(w.WEBHOOK_RETRY_DELAYS).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(w.WEBHOOK_DISABLE_AFTER).toBe(100);
    expect(w.WEBHOOK_DISABLE_MIN_AGE).toBe(5 * 86_400_000);
    expect(w.WEBHOOK_TIMEOUT_MS).toBe(15_000);
    expect(w.WEBHOOK_ALLOW_HTTP).toBe(false);
    expect(w.WEBHOOK_SECRET_KEY.isDevKey).toBe(true);
    expect(w.WEBHOOK_ENDPOINT_CONCURRENCY).toBe(32);
  });

  it("when a webhook setting is malformed, then each bad one is named", () => {
    const message = fail(WebhooksConfig, {
      WEBHOOK_RETRY_DELAYS: "0,soon",
      WEBHOOK_DISABLE_AFTER: "0",
      WEBHOOK_DISABLE_MIN_AGE: "a while",
      WEBHOOK_ENDPOINT_CONCURRENCY: "-1",
      WEBHOOK_SECRET_KEY: "short",
    });
    for (const name of ["WEBHOOK_RETRY_DELAYS", "WEBHOOK_DISABLE_AFTER", "WEBHOOK_DISABLE_MIN_AGE", "WEBHOOK_ENDPOINT_CONCURRENCY", "WEBHOOK_SECRET_KEY"]) {
      expect(message).toContain(name);
    }
  });

  it("when the lease does not outlast the call timeout, then WEBHOOK_LEASE is refused", () => {
    expect(fail(WebhooksConfig, { WEBHOOK_TIMEOUT_MS: "15000", WEBHOOK_LEASE: "15s" })).toContain("WEBHOOK_LEASE");
    expect(parseConfig(WebhooksConfig, { WEBHOOK_TIMEOUT_MS: "15000", WEBHOOK_LEASE: "16s" }).WEBHOOK_LEASE).toBe(16_000);
  });
});
