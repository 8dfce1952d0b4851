import { Writable } from "node:stream";
import { parseConfig } from "@tasksvc/config";
import { KeysConfig, service as keysService } from "@tasksvc/keys";
import { createLogger } from "@tasksvc/logger";
import { startService } from "@tasksvc/runtime";
import { api, factories } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayConfig } from "../src/config.js";
import { service as gatewayService } from "../src/service.js";

const stack = inject("stack");
// A stack of its own (same database, its own namespace) whose logs this test reads.
const namespace = `${stack.namespace}_log`;
const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  },
});
// A second gateway on the same stack, logging as `make run` does at a terminal (LOG_FORMAT=pretty).
let pretty = "";
const prettySink = new Writable({
  write(chunk: Buffer, _enc, done) {
    pretty += chunk.toString("utf8");
    done();
  },
});
const env = { DATABASE_URL: stack.databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: namespace, PORT: "0" };
const f = factories({ ...stack, namespace });
let stops: Array<() => Promise<void>> = [];
let gw: ReturnType<typeof api>;
let prettyGw: ReturnType<typeof api>;

beforeAll(async () => {
  const keys = await startService(keysService, parseConfig(KeysConfig, env), createLogger({ service: "keys", level: "debug", destination: sink }));
  const gateway = await startService(gatewayService, parseConfig(GatewayConfig, env), createLogger({ service: "gateway", level: "info", destination: sink }));
  const prettyGateway = await startService(
    gatewayService,
    parseConfig(GatewayConfig, { ...env, LOG_FORMAT: "pretty" }),
    createLogger({ service: "gateway", level: "info", format: "pretty", colorize: true, destination: prettySink }),
  );
  stops = [() => prettyGateway.stop(), () => gateway.stop(), () => keys.stop()];
  gw = api(gateway.url);
  prettyGw = api(prettyGateway.url);
});
afterAll(async () => {
  for (const s of stops) await s();
  await f.close();
});

describe("logs", () => {
  it("when a request crosses gateway and keys service, then every line of it in both carries its request_id", async () => {
    const t = await f.tenant();
    const r = await gw.get("/v1/organizations", { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    const id = r.headers.get("x-request-id");
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !lines.some((l) => l["service"] === "gateway" && l["request_id"] === id)) await new Promise((res) => setTimeout(res, 20));
    const mine = lines.filter((l) => l["request_id"] === id);
    const services = new Set(mine.map((l) => l["service"]));
    expect([...services].sort(), JSON.stringify(mine)).toEqual(["gateway", "keys"]);
    const keysLine = mine.find((l) => l["service"] === "keys" && l["op"] === "keys.listOrganizations");
    expect(keysLine, JSON.stringify(mine)).toMatchObject({ organization_id: t.organizationId, msg: "rpc handled" });
    const access = mine.find((l) => l["service"] === "gateway" && l["msg"] === "request");
    expect(access).toMatchObject({ method: "GET", url: "/v1/organizations", status: 200, organization_id: t.organizationId });
  });

  it("when lines are written during requests, then none of the request-scoped ones lacks a request_id", () => {
    const scoped = lines.filter((l) => l["msg"] === "request" || l["msg"] === "rpc handled");
    expect(scoped.length).toBeGreaterThan(0);
    for (const l of scoped) expect(typeof l["request_id"], JSON.stringify(l)).toBe("string");
  });

  it("when a credential is sent, then no line contains it", async () => {
    const t = await f.tenant();
    await gw.get("/v1/organizations", { token: t.apiKey });
    await gw.get("/v1/organizations", { token: "svc_live_notAKeyButStillSecret0000000000000000000" });
    const all = JSON.stringify(lines);
    expect(all).not.toContain(t.apiKey);
    expect(all).not.toContain("notAKeyButStillSecret");
  });

  it("when logs are pretty, then the access line is one line with the organization, and no credential appears", async () => {
    const t = await f.tenant();
    const r = await prettyGw.get("/v1/organizations", { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    await prettyGw.get("/v1/organizations", { token: "svc_live_notAKeyButStillSecret0000000000000000000" });
    const id = r.headers.get("x-request-id") ?? "";
    // The access line is written once the response is sent: wait for both requests' lines.
    const uncoloured = () => pretty.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), "");
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !(pretty.includes(id) && uncoloured().includes(" 401 "))) await new Promise((res) => setTimeout(res, 20));
    const plain = uncoloured();
    const line = plain.split("\n").find((l) => l.includes(id));
    expect(line, plain).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO gateway: GET /v1/organizations 200 \\d+ms ${t.organizationId} ${id}$`));
    expect(plain).toMatch(/ INFO gateway: GET \/v1\/organizations 401 \d+ms req_\S+\n/);
    expect(pretty).not.toContain(t.apiKey);
    expect(pretty).not.toContain("notAKeyButStillSecret");
  });
});
