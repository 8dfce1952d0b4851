import { e2eContext } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

const { gw, f } = e2eContext();

describe("a request cannot take a service down (issue 9, finding 2)", () => {
  it("when ids and fields carry CR or LF, then each request gets a 4xx problem and the keys and tasks services keep answering", async () => {
    const t = await f.tenant();
    const token = t.apiKey;
    const hostile = [
      gw.get("/v1/organizations/a%0Ab", { token }),
      gw.get("/v1/organizations/a%0D%0Ab", { token }),
      gw.delete("/v1/api-keys/a%0Ab", { token }),
      gw.post("/v1/tasks", { title: "x", project_id: "a\nb" }, { token }),
      gw.post("/v1/tasks", { title: "x", project_ids: ["a\nb"] }, { token }),
      gw.patch("/v1/tasks/T-1", { project_ids: ["a\r\nb"] }, { token }),
    ];
    for (const r of await Promise.all(hostile)) {
      expect(r.status, r.text).toBeGreaterThanOrEqual(400);
      expect(r.status, r.text).toBeLessThan(500);
      expect(r.headers.get("content-type"), r.text).toMatch(/^application\/problem\+json/);
    }
    const orgs = await gw.get("/v1/organizations", { token });
    expect(orgs.status, orgs.text).toBe(200);
    const created = await gw.post("/v1/tasks", { title: "after the hostile requests" }, { token });
    expect(created.status, created.text).toBe(201);
  });
});
