import http from "node:http";
import type { AddressInfo } from "node:net";
import { eventually } from "@tasksvc/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { BlockedClass } from "../src/egress.js";
import { EgressRefused, MAX_RESPONSE_BYTES, checkUrl, classifyAddress, egressRequestOptions, guardedLookup, postGuarded } from "../src/egress.js";

describe("classifyAddress", () => {
  const cases: [BlockedClass, string[]][] = [
    ["loopback", ["127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "2002:7f00:0001::1", "64:ff9b::7f00:1", "::127.0.0.1"]],
    // 2001:0:…:f5ff:fffe is Teredo with client 10.0.0.1 (bits 96-127 inverted).
    [
      "private",
      [
        "10.0.0.1",
        "172.16.5.4",
        "172.31.255.255",
        "192.168.1.1",
        "fc00::1",
        "fd12:3456::1",
        "fec0::1",
        "::ffff:10.1.2.3",
        "2002:c0a8:101::1",
        "2001:0:4136:e378:8000:63bf:f5ff:fffe",
      ],
    ],
    ["link_local", ["169.254.1.1", "169.254.255.255", "fe80::1", "fe80::1%eth0", "::ffff:169.254.0.5"]],
    [
      "metadata",
      ["169.254.169.254", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "fd00:ec2::254", "100.100.100.200", "168.63.129.16"],
    ],
    ["cgnat", ["100.64.0.1", "100.127.255.254", "::ffff:100.64.0.1", "64:ff9b::6440:1"]],
    ["multicast", ["224.0.0.1", "239.255.255.250", "ff02::1", "ff05::1:3", "::ffff:224.0.0.251"]],
    ["unspecified", ["0.0.0.0", "::", "::ffff:0.0.0.0", "0:0:0:0:0:0:0:0"]],
    [
      "reserved",
      [
        "0.1.2.3",
        "240.0.0.1",
        "255.255.255.255",
        "198.18.0.1",
        "198.19.255.255",
        "192.0.2.1",
        "198.51.100.7",
        "203.0.113.9",
        "192.0.0.8",
        "192.88.99.1",
        "100::1",
        "2001:db8::1",
        "3fff::1",
        "2001:2::1",
        "5f00::1",
        "4000::1",
        // Deprecated IPv4-compatible and local-use NAT64 forms stay blocked with a public inside.
        "::8.8.8.8",
        "64:ff9b:1::808:808",
      ],
    ],
  ];

  for (const [cls, addresses] of cases) {
    it.each(addresses)(`when the address is %s, then it is ${cls}`, (ip) => {
      expect(classifyAddress(ip)).toBe(cls);
    });
  }

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
    // Just outside the blocked ranges, so an off-by-one prefix fails here.
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "169.253.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "11.0.0.0",
  ])("when the address is public (%s), then it is not blocked", (ip) => {
    expect(classifyAddress(ip)).toBeNull();
  });

  it.each(["localhost", "127.1", "", "::ffff:1.2.3", "[::1]"])("when the input %j is not an IP address, then it throws", (input) => {
    expect(() => classifyAddress(input)).toThrow(TypeError);
  });
});

function refusal(fn: () => unknown): EgressRefused {
  try {
    fn();
  } catch (err) {
    if (err instanceof EgressRefused) return err;
    throw err;
  }
  throw new Error("expected an EgressRefused, nothing was thrown");
}

describe("checkUrl", () => {
  it.each([
    ["ftp://example.com/hook", false, "scheme"],
    ["http://example.com/hook", false, "scheme"],
    ["javascript:alert(1)", true, "scheme"],
    ["file:///etc/passwd", true, "scheme"],
    ["https://user:secret@example.com/hook", false, "userinfo"],
    ["https://user@example.com/hook", false, "userinfo"],
    ["http://:secret@example.com/hook", true, "userinfo"],
    ["not a url", false, "invalid_url"],
    ["https://", false, "invalid_url"],
  ])("when the URL is %s (allowHttp %s), then it is refused with %s", (url, allowHttp, reason) => {
    const err = refusal(() => checkUrl(url, { allowHttp }));
    expect(err.reason).toBe(reason);
    expect(err.code).toBe("EGRESS_BLOCKED");
    expect(err.message).not.toContain("secret");
  });

  it("when the URL is https, or http with allowHttp, then it is returned parsed", () => {
    expect(checkUrl("https://example.com/hook?a=1", { allowHttp: false }).href).toBe("https://example.com/hook?a=1");
    expect(checkUrl("http://example.com/hook", { allowHttp: true }).protocol).toBe("http:");
  });
});

describe("egressRequestOptions", () => {
  it.each([
    ["https://[::ffff:127.0.0.1]/hook", "loopback"],
    ["https://0x7f000001/hook", "loopback"],
    ["https://169.254.169.254/latest/meta-data/", "metadata"],
    ["https://[64:ff9b::a9fe:a9fe]/", "metadata"],
    ["https://10.1.2.3:8443/", "private"],
    ["https://0.0.0.0/", "unspecified"],
  ])("when the host is the literal address in %s, then it is refused with %s", (url, reason) => {
    expect(refusal(() => egressRequestOptions(url, { allowHttp: false, allowPrivate: false })).reason).toBe(reason);
  });

  it("when allowPrivate is set, then a loopback literal passes but the metadata address does not", () => {
    const opts = { allowHttp: false, allowPrivate: true };
    expect(egressRequestOptions("https://[::1]:8443/hook", opts).options).toMatchObject({ hostname: "::1", port: 8443, path: "/hook" });
    expect(refusal(() => egressRequestOptions("https://169.254.169.254/", opts)).reason).toBe("metadata");
  });

  it("when the host is a name, then nothing is refused before the dial", () => {
    expect(egressRequestOptions("https://localhost/hook", { allowHttp: false, allowPrivate: false }).options.hostname).toBe("localhost");
  });
});

function lookupAll(hostname: string, allowPrivate: boolean): Promise<{ address: string; family: number }[]> {
  return new Promise((resolve, reject) => {
    guardedLookup({ allowPrivate })(hostname, { all: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(typeof addresses === "string" ? [{ address: addresses, family: 0 }] : addresses);
    });
  });
}

describe("guardedLookup", () => {
  it("when a name resolves to loopback, then the lookup fails with EGRESS_BLOCKED and the class", async () => {
    const err: unknown = await lookupAll("localhost", false).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EgressRefused);
    expect(err).toMatchObject({ code: "EGRESS_BLOCKED", reason: "loopback" });
  });

  it("when allowPrivate is set, then the loopback addresses are handed back", async () => {
    const addresses = await lookupAll("localhost", true);
    expect(addresses.length).toBeGreaterThan(0);
    for (const a of addresses) expect(classifyAddress(a.address)).toBe("loopback");
  });

  it("when one address is asked for, then it is returned with its family", async () => {
    const [address, family] = await new Promise<[unknown, unknown]>((resolve, reject) => {
      guardedLookup({ allowPrivate: true })("127.0.0.1", { family: 4 }, (err, a, f) => (err ? reject(err) : resolve([a, f])));
    });
    expect([address, family]).toEqual(["127.0.0.1", 4]);
  });
});

interface TestServer {
  readonly url: string;
  readonly port: number;
  readonly requests: { method: string; url: string; body: string; headers: http.IncomingHttpHeaders }[];
}

const servers: http.Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function startServer(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<TestServer> {
  const requests: TestServer["requests"] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", url: req.url ?? "", body: Buffer.concat(chunks).toString(), headers: req.headers });
      handler(req, res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, requests };
}

const local = { allowHttp: true, allowPrivate: true, timeoutMs: 5_000 } as const;
const strict = { allowHttp: true, allowPrivate: false, timeoutMs: 5_000 } as const;

describe("postGuarded", () => {
  it("when the target is 127.0.0.1 without allowPrivate, then it is blocked as loopback and never reached", async () => {
    const target = await startServer((_req, res) => res.writeHead(204).end());
    const result = await postGuarded(`${target.url}/hook`, { ...strict, body: "{}" });
    expect(result).toMatchObject({ outcome: "blocked", errorClass: "loopback" });
    expect(target.requests).toHaveLength(0);
  });

  it("when the target is 127.0.0.1 with allowPrivate, then the body and headers are delivered", async () => {
    const target = await startServer((_req, res) => res.writeHead(204).end());
    const body = JSON.stringify({ type: "task.created" });
    const result = await postGuarded(`${target.url}/hook?x=1`, { ...local, body, headers: { "content-type": "application/json", "webhook-id": "evt_1" } });
    expect(result, JSON.stringify(result)).toMatchObject({ outcome: "delivered", status: 204 });
    expect(target.requests).toEqual([
      expect.objectContaining({ method: "POST", url: "/hook?x=1", body, headers: expect.objectContaining({ "webhook-id": "evt_1" }) }),
    ]);
  });

  it("when http is not allowed, then an http target is blocked for its scheme", async () => {
    const target = await startServer((_req, res) => res.writeHead(204).end());
    const result = await postGuarded(target.url, { ...local, allowHttp: false, body: "{}" });
    expect(result).toMatchObject({ outcome: "blocked", errorClass: "scheme" });
    expect(target.requests).toHaveLength(0);
  });

  it("when a name resolves to loopback, then the dial is refused and the server is never reached", async () => {
    const target = await startServer((_req, res) => res.writeHead(204).end());
    const result = await postGuarded(`http://localhost:${target.port}/hook`, { ...strict, body: "{}" });
    expect(result).toMatchObject({ outcome: "blocked", errorClass: "loopback" });
    expect(target.requests).toHaveLength(0);
  });

  it("when a kept-alive socket was opened with allowPrivate, then a call without it does not reuse it", async () => {
    const target = await startServer((_req, res) => res.writeHead(204).end());
    const url = `http://localhost:${target.port}/hook`;
    expect(await postGuarded(url, { ...local, body: "{}" })).toMatchObject({ outcome: "delivered" });
    expect(await postGuarded(url, { ...strict, body: "{}" })).toMatchObject({ outcome: "blocked", errorClass: "loopback" });
    expect(target.requests).toHaveLength(1);
  });

  it("when the target redirects, then the 3xx is returned and the redirect target is never requested", async () => {
    const elsewhere = await startServer((_req, res) => res.writeHead(204).end());
    const target = await startServer((_req, res) => res.writeHead(302, { location: `${elsewhere.url}/stolen` }).end());
    const result = await postGuarded(target.url, { ...local, body: "{}" });
    expect(result).toMatchObject({ outcome: "redirect_blocked", status: 302 });
    expect(target.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("when the target answers 503 with Retry-After, then the outcome is request_failed with the status and header", async () => {
    const target = await startServer((_req, res) => res.writeHead(503, { "retry-after": "7" }).end("busy"));
    const result = await postGuarded(target.url, { ...local, body: "{}" });
    expect(result).toMatchObject({ outcome: "request_failed", status: 503, retryAfter: "7" });
  });

  it("when the target never answers, then the outcome is timeout", async () => {
    const target = await startServer(() => {
      // Holds the request open; afterEach closes the connection.
    });
    const result = await postGuarded(target.url, { ...local, timeoutMs: 300, body: "{}" });
    expect(result).toMatchObject({ outcome: "timeout" });
    expect(result.status).toBeUndefined();
    expect(target.requests).toHaveLength(1);
  });

  it("when a 2xx body never ends, then at most a bounded amount is read and the call is delivered", async () => {
    let written = 0;
    let clientGone = false;
    const chunk = Buffer.alloc(16 * 1024, 0x78);
    const target = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.on("close", () => {
        clientGone = true;
      });
      const pump = (): void => {
        while (!res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once("drain", pump);
            return;
          }
        }
      };
      pump();
    });
    // An unbounded read would run into this limit and come back as a timeout.
    const result = await postGuarded(target.url, { ...local, timeoutMs: 10_000, body: "{}" });
    expect(result, JSON.stringify(result)).toMatchObject({ outcome: "delivered", status: 200 });
    await eventually(() => clientGone, { intervalMs: 10, what: "the client to drop the endless response" });
    expect(written).toBeGreaterThan(MAX_RESPONSE_BYTES);
  });

  it("when nothing listens on the port, then the outcome is request_failed with the error code", async () => {
    const target = await startServer(() => {});
    const server = servers.pop();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    const result = await postGuarded(target.url, { ...local, body: "{}" });
    expect(result).toMatchObject({ outcome: "request_failed", errorClass: "ECONNREFUSED" });
  });
});
