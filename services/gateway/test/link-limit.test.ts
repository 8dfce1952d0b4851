import type { BlobStore } from "@tasksvc/blobs";
import { describe, expect, it } from "vitest";
import { GatewayConfig } from "../src/config.js";
import { clientKey, linkLimiter } from "../src/http/link-limits.js";
import { bareGateway } from "./bare.js";

// The link routes' limit per client address: its settings, its counting, and which address it
// counts by (TRUST_PROXY). Through HTTP against a whole stack: test/e2e/attachment-links.test.ts.
const parse = (env: Record<string, string>) => GatewayConfig.safeParse(env);

describe("LINK_RATE_LIMIT and TRUST_PROXY", () => {
  it("when unset, then 300 requests a minute per address, and no proxy is trusted", () => {
    const cfg = parse({});
    expect(cfg.data?.LINK_RATE_LIMIT).toEqual({ limit: 300, windowMs: 60_000 });
    expect(cfg.data?.TRUST_PROXY).toBe(false);
  });

  it("when given, then `<requests>/<window>` or off, and a list of proxy addresses, ranges and named ranges", () => {
    expect(parse({ LINK_RATE_LIMIT: "20/10s" }).data?.LINK_RATE_LIMIT).toEqual({ limit: 20, windowMs: 10_000 });
    expect(parse({ LINK_RATE_LIMIT: "off" }).data?.LINK_RATE_LIMIT).toBeNull();
    expect(parse({ TRUST_PROXY: "10.0.0.0/8, 192.0.2.1,loopback,fd00::/8" }).data?.TRUST_PROXY).toEqual(["10.0.0.0/8", "192.0.2.1", "loopback", "fd00::/8"]);
  });

  it("when malformed, then the process does not start and the message says what is expected", () => {
    for (const bad of ["300", "0/1m", "10/0s", "10/2d", "ten/1m"]) {
      expect(parse({ LINK_RATE_LIMIT: bad }).error?.issues[0]?.message, bad).toMatch(/^expected `<requests>\/<window>`/);
    }
    expect(parse({ TRUST_PROXY: "true" }).error?.issues[0]?.message).toMatch(/would let any client name its own address/);
    expect(parse({ TRUST_PROXY: "1" }).error?.issues[0]?.message).toMatch(/a hop count cannot tell a proxy from a client/);
    expect(parse({ TRUST_PROXY: "10.0.0.0/33,proxy.internal" }).error?.issues[0]?.message).toMatch(/not an address: 10\.0\.0\.0\/33, proxy\.internal$/);
  });
});

describe("linkLimiter", () => {
  it("when an address makes more requests than the limit in its window, then it waits out the window; another address does not", () => {
    let now = 1_000_000;
    const limiter = linkLimiter({ limit: 3, windowMs: 10_000 }, { now: () => now });
    expect([1, 2, 3].map(() => limiter.take("198.51.100.1"))).toEqual([0, 0, 0]);
    expect(limiter.take("198.51.100.1")).toBe(10);
    expect(limiter.take("198.51.100.2")).toBe(0);
    now += 9_001;
    expect(limiter.take("198.51.100.1")).toBe(1);
    now += 999;
    expect(limiter.take("198.51.100.1")).toBe(0);
  });

  it("when windows end, then they are forgotten; past the most clients it keeps, the oldest window goes first", () => {
    let now = 0;
    const limiter = linkLimiter({ limit: 1, windowMs: 1000 }, { now: () => now, maxClients: 2 });
    limiter.take("192.0.2.1");
    now = 500;
    limiter.take("192.0.2.2");
    now = 1000;
    limiter.take("192.0.2.3");
    expect(limiter.size).toBe(2);
    expect(limiter.take("192.0.2.2")).toBe(1);
    limiter.take("192.0.2.4");
    // 192.0.2.2's window was the oldest kept: forgotten, so it is let through again.
    expect(limiter.size).toBe(2);
    expect(limiter.take("192.0.2.2")).toBe(0);
  });

  it("when addresses are IPv6, then one /64 is one client; IPv4-mapped addresses are their IPv4 address", () => {
    expect(clientKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(clientKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(clientKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
    expect(clientKey("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(clientKey("203.0.113.9")).toBe("203.0.113.9");
  });
});

describe("the link routes' client address", () => {
  // No services behind this gateway: a request the limit lets through fails later (500), one it
  // stops answers 429 before anything is asked.
  const gateway = (trustProxy: false | string[]) => bareGateway({ blobs: {} as BlobStore, linkRate: { limit: 1, windowMs: 60_000 }, trustProxy });
  const download = (app: ReturnType<typeof bareGateway>, forwardedFor: string) =>
    app.inject({ method: "GET", url: "/v1/downloads/abcdefghijklmnopqrstuvwxyz", headers: { "x-forwarded-for": forwardedFor } });

  it("when no proxy is trusted, then X-Forwarded-For is ignored: every request counts against the peer's address", async () => {
    const app = gateway(false);
    expect((await download(app, "198.51.100.1")).statusCode).not.toBe(429);
    const second = await download(app, "198.51.100.2");
    expect(second.statusCode).toBe(429);
    expect(second.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(second.headers["retry-after"]).toBe("60");
    expect(second.json()).toMatchObject({ code: "rate_limited", status: 429 });
    await app.close();
  });

  it("when the peer is a trusted proxy, then the client is the address it forwarded", async () => {
    const app = gateway(["loopback"]);
    expect((await download(app, "198.51.100.1")).statusCode).not.toBe(429);
    expect((await download(app, "198.51.100.2")).statusCode).not.toBe(429);
    expect((await download(app, "198.51.100.1")).statusCode).toBe(429);
    // A client cannot step around the limit by prepending addresses of its own choosing.
    expect((await download(app, "203.0.113.50, 198.51.100.1")).statusCode).toBe(429);
    await app.close();
  });
});
