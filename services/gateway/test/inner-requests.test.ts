import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import type { Identity } from "@tasksvc/contracts";
import { innerRequests } from "../src/http/inner-requests.js";
import { bareGateway } from "./bare.js";

// A request this process injects for an MCP tool call runs under the MCP request's id; nobody else
// can choose a request id (it is never taken from a client).
const raw = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe("the request id of an injected request", () => {
  it("when the header carries this process's secret, then its id is taken; with another secret or none, never", () => {
    const inner = innerRequests();
    const other = innerRequests();
    expect(inner.requestIdOf(raw(inner.enter("req_abc").headers))).toBe("req_abc");
    expect(inner.requestIdOf(raw(inner.enter("req_a.b").headers))).toBe("req_a.b");
    expect(inner.requestIdOf(raw(other.enter("req_abc").headers))).toBeUndefined();
    const [name] = Object.keys(inner.enter("x").headers);
    expect(inner.requestIdOf(raw({ [String(name)]: "req_abc" }))).toBeUndefined();
    expect(inner.requestIdOf(raw({ [String(name)]: ".req_abc" }))).toBeUndefined();
    expect(inner.requestIdOf(raw({}))).toBeUndefined();
  });

  it("when an identity is handed with the request, then that request and no other has it, until it is answered", () => {
    const inner = innerRequests();
    const identity = { organization_id: "org_1", user_id: "usr_1", credential_id: "key_1" } as unknown as Identity;
    const call = inner.enter("req_abc", identity);
    const carried = raw(call.headers);
    expect(inner.identityOf(carried)).toBe(identity);
    expect(inner.requestIdOf(carried)).toBe("req_abc");
    // Another process's secret with this process's ticket: no identity.
    const forged = Object.values(innerRequests().enter("req_abc", identity).headers)[0] as string;
    const [name] = Object.keys(call.headers);
    expect(inner.identityOf(raw({ [String(name)]: forged }))).toBeUndefined();
    expect(inner.identityOf(raw(inner.enter("req_abc").headers))).toBeUndefined();
    call.done();
    expect(inner.identityOf(raw(call.headers))).toBeUndefined();
  });

  it("when a client sends the header with a made-up secret, then its request gets an id of the gateway's own", async () => {
    const app = bareGateway();
    try {
      const [name] = Object.keys(innerRequests().enter("x").headers);
      const r = await app.inject({ method: "GET", url: "/healthz", headers: { [String(name)]: "guessed.req_chosen_by_client" } });
      expect(r.statusCode).toBe(200);
      expect(r.headers["x-request-id"]).toMatch(/^req_[0-9a-f]{32}$/);
    } finally {
      await app.close();
    }
  });
});
