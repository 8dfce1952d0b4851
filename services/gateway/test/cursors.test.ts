import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { cursorCodec } from "../src/pipeline/cursors.js";

// The cursor codec alone: what a cursor is bound to, and which step refuses it. The HTTP answers
// are in test/e2e/cursors.test.ts.
const secret = "cursor-test-secret";
const codec = cursorCodec(secret);
const route = "/v1/tasks/:task_id/history";
const query = { limit: 1 };
const owner = (params: unknown, organization = "org_a") => ({ organization, params });

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return { code: (e as { code?: string }).code, errors: (e as { errors?: unknown }).errors };
  }
  return undefined;
};
const rebound = {
  code: "validation_failed",
  errors: [{ pointer: "/after", message: "was issued for a different query; reuse a cursor only with the same limit and filters" }],
};

describe("cursorCodec", () => {
  it("when a cursor is opened with its query, organization and path, then it gives back the position", () => {
    const cursor = codec.wrap(route, query, owner({ task_id: "T-24" }), "pos");
    expect(codec.open(route, query, cursor).position(owner({ task_id: "T-24" }))).toBe("pos");
  });

  it("when a task is spelled another way (24, T-024), then it is the same task; another task or organization is refused", () => {
    const cursor = codec.wrap(route, query, owner({ task_id: "T-24" }), "pos");
    const opened = codec.open(route, query, cursor);
    for (const spelling of ["24", "T-024", "0024"]) expect(opened.position(owner({ task_id: spelling }))).toBe("pos");
    expect(refusal(() => opened.position(owner({ task_id: "T-25" })))).toEqual(rebound);
    expect(refusal(() => opened.position(owner({ task_id: "T-24" }, "org_b")))).toEqual(rebound);
  });

  it("when an id that is not a task's differs only in its spelling, then it is another id", () => {
    const deliveries = "/v1/webhook-endpoints/:endpoint_id/deliveries";
    const cursor = codec.wrap(deliveries, query, owner({ endpoint_id: "whe_24" }), "pos");
    expect(refusal(() => codec.open(deliveries, query, cursor).position(owner({ endpoint_id: "WHE_24" })))).toEqual(rebound);
    const numeric = codec.wrap(deliveries, query, owner({ endpoint_id: "24" }), "pos");
    expect(refusal(() => codec.open(deliveries, query, numeric).position(owner({ endpoint_id: "T-24" })))).toEqual(rebound);
  });

  it("when the query differs, then opening refuses it, before the path is known", () => {
    const cursor = codec.wrap(route, query, owner({ task_id: "T-24" }), "pos");
    expect(refusal(() => codec.open(route, { limit: 2 }, cursor))).toEqual(rebound);
  });

  it("when a cursor was signed before organizations and paths were bound, then it is refused like a reused one", () => {
    // The former payload: the position and the query's binding, signed with the same key.
    const q = createHash("sha256")
      .update(route)
      .update(JSON.stringify(Object.entries(query)))
      .digest("base64url")
      .slice(0, 22);
    const payload = Buffer.from(JSON.stringify({ r: "pos", q })).toString("base64url");
    const old = `${payload}.${createHmac("sha256", secret).update(payload).digest().subarray(0, 16).toString("base64url")}`;
    const opened = codec.open(route, query, old);
    expect(refusal(() => opened.position(owner({ task_id: "T-24" })))).toEqual(rebound);
  });
});
