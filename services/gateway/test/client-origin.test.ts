import Fastify from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { clientOrigin } from "../src/http/requests.js";

// What the RPC context (and so the audit log) records of where a request came from: behind a
// trusted proxy the client names its own X-Forwarded-For entry, which may be no address at all.
describe("clientOrigin", () => {
  const app = Fastify({ trustProxy: ["127.0.0.1"] });
  app.get("/", async (req) => clientOrigin(req));
  afterAll(() => app.close());

  const origin = async (headers: Record<string, string>) =>
    (await app.inject({ method: "GET", url: "/", remoteAddress: "127.0.0.1", headers })).json() as { ip?: string; user_agent?: string };

  it("when a trusted proxy forwards an address and a User-Agent, then both are kept", async () => {
    expect(await origin({ "x-forwarded-for": "2001:db8::7", "user-agent": "agent/1" })).toEqual({ ip: "2001:db8::7", user_agent: "agent/1" });
  });

  it("when the forwarded entry is no address (long text), then the address is left out, and a long User-Agent is cut to 512 characters", async () => {
    const got = await origin({ "x-forwarded-for": "x".repeat(300), "user-agent": "u".repeat(2000) });
    expect(got.ip).toBeUndefined();
    expect(got.user_agent).toBe("u".repeat(512));
  });

  it("when nothing is forwarded, then the address is the connection's", async () => {
    expect((await origin({})).ip).toBe("127.0.0.1");
  });
});
