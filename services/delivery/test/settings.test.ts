import { parseConfig } from "@tasksvc/config";
import { describe, expect, it } from "vitest";
import { DeliveryConfig } from "../src/service.js";

describe("delivery settings", () => {
  it("when unset, then the guard is strict and the defaults apply; it reads no database setting", () => {
    const d = parseConfig(DeliveryConfig, { DATABASE_URL: "ignored" });
    expect(d).toEqual(
      expect.objectContaining({ WEBHOOK_ALLOW_HTTP: false, WEBHOOK_ALLOW_PRIVATE_TARGETS: false, WEBHOOK_TIMEOUT_MS: 15_000, WEBHOOK_CONCURRENCY: 256 }),
    );
    expect(d).not.toHaveProperty("DATABASE_URL");
  });

  it("when a setting is malformed, then each bad one is named", () => {
    let message = "";
    try {
      parseConfig(DeliveryConfig, { WEBHOOK_TIMEOUT_MS: "61000", WEBHOOK_CONCURRENCY: "many", WEBHOOK_ALLOW_PRIVATE_TARGETS: "sure" });
    } catch (e) {
      message = e instanceof Error ? e.message : String(e);
    }
    for (const name of ["WEBHOOK_TIMEOUT_MS", "WEBHOOK_CONCURRENCY", "WEBHOOK_ALLOW_PRIVATE_TARGETS"]) expect(message).toContain(name);
  });
});
