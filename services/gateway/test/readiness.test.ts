import { Health } from "@tasksvc/telemetry";
import { describe, expect, it } from "vitest";
import { bareGateway } from "./bare.js";

// The public /readyz is anonymous: a flood of calls must not become a flood of database queries,
// NATS flushes and service pings. The gateway answers it from the replica's Health, whose one
// round of checks serves every call for about a second.
describe("the public /readyz", () => {
  it("when anonymous calls arrive together and one after another, then one round of checks answers them all, and stopping shows at once", async () => {
    const health = new Health();
    let rounds = 0;
    health.check("service:tasks", () => {
      rounds++;
      return "ok";
    });
    health.serving();
    const app = bareGateway({ health });
    try {
      const together = await Promise.all(Array.from({ length: 20 }, () => app.inject({ method: "GET", url: "/readyz" })));
      expect(together.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
      for (let i = 0; i < 20; i++) expect((await app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);
      expect(rounds).toBe(1);
      health.stopping();
      const stopping = await app.inject({ method: "GET", url: "/readyz" });
      expect(stopping.statusCode).toBe(503);
      expect(stopping.json()).toMatchObject({ code: "service_unavailable", detail: "Not ready: process stopping." });
      expect(rounds).toBe(1);
    } finally {
      await app.close();
    }
  });
});
