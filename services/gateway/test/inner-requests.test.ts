import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { innerRequests } from "../src/http/inner-requests.js";
import { bareGateway } from "./bare.js";

// A request this process injects for an MCP tool call runs under the MCP request's id; nobody else
// can choose a request id (it is never taken from a client).
const raw = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe("the request id of an injected request", () => {
  it("when the header carries this process's secret, then its id is taken; with another secret or none, never", () => {
    const inner = innerRequests();
    const other = innerRequests();
    expect(inner.requestIdOf(raw(inner.header("req_abc")))).toBe("req_abc");
    expect(inner.requestIdOf(raw(other.header("req_abc")))).toBeUndefined();
    const [name] = Object.keys(inner.header("x"));
    expect(inner.requestIdOf(raw({ [String(name)]: "req_abc" }))).toBeUndefined();
    expect(inner.requestIdOf(raw({ [String(name)]: ".req_abc" }))).toBeUndefined();
    expect(inner.requestIdOf(raw({}))).toBeUndefined();
  });

  it("when a client sends the header with a made-up secret, then its request gets an id of the gateway's own", async () => {
    const app = bareGateway();
    try {
      const [name] = Object.keys(innerRequests().header("x"));
      const r = await app.inject({ method: "GET", url: "/healthz", headers: { [String(name)]: "guessed.req_chosen_by_client" } });
      expect(r.statusCode).toBe(200);
      expect(r.headers["x-request-id"]).toMatch(/^req_[0-9a-f]{32}$/);
    } finally {
      await app.close();
    }
  });
});
