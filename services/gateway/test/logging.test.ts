import { Writable } from "node:stream";
import { parseConfig } from "@tasksvc/config";
import { KeysConfig, service as keysService } from "@tasksvc/keys";
import { createLogger } from "@tasksvc/logger";
import { startService } from "@tasksvc/runtime";
import { api, eventually, factories, loadService, bodyOf } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayConfig } from "../src/config.js";
import { service as gatewayService } from "../src/service.js";
import { DownloadLink, UploadTicket } from "@tasksvc/contracts";

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
// OPS_PORT 0: two gateways (and keys) in one process, each with its own free ops port.
const env = { DATABASE_URL: stack.databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: namespace, PORT: "0", OPS_PORT: "0" };
const f = factories({ ...stack, namespace });
let stops: Array<() => Promise<void>> = [];
let gw: ReturnType<typeof api>;
let gatewayUrl: string;
let prettyGw: ReturnType<typeof api>;

beforeAll(async () => {
  const keys = await startService(keysService, parseConfig(KeysConfig, env), createLogger({ service: "keys", level: "debug", destination: sink }));
  // The tasks service checks upload and download links; its links live 2 s, so one expires during a test.
  const tasksService = await loadService("tasks");
  const tasks = await startService(
    tasksService,
    parseConfig(tasksService.config, { ...env, DOWNLOAD_LINK_TTL: "2s" }),
    createLogger({ service: "tasks", level: "debug", destination: sink }),
  );
  const gateway = await startService(gatewayService, parseConfig(GatewayConfig, env), createLogger({ service: "gateway", level: "debug", destination: sink }));
  const prettyGateway = await startService(
    gatewayService,
    parseConfig(GatewayConfig, { ...env, LOG_FORMAT: "pretty" }),
    createLogger({ service: "gateway", level: "info", format: "pretty", colorize: true, destination: prettySink }),
  );
  stops = [() => prettyGateway.stop(), () => gateway.stop(), () => tasks.stop(), () => keys.stop()];
  gatewayUrl = gateway.url;
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
    const r = await gw.get("/v1/members", { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    const id = r.headers.get("x-request-id");
    await eventually(() => lines.some((l) => l["service"] === "gateway" && l["request_id"] === id), { what: `the gateway's line of ${id}` });
    const mine = lines.filter((l) => l["request_id"] === id);
    const services = new Set(mine.map((l) => l["service"]));
    expect([...services].sort(), JSON.stringify(mine)).toEqual(["gateway", "keys"]);
    const keysLine = mine.find((l) => l["service"] === "keys" && l["op"] === "keys.listMembers");
    expect(keysLine, JSON.stringify(mine)).toMatchObject({ organization_id: t.organizationId, msg: "rpc handled" });
    const access = mine.find((l) => l["service"] === "gateway" && l["msg"] === "request");
    expect(access).toMatchObject({ method: "GET", url: "/v1/members", status: 200, organization_id: t.organizationId });
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
    await eventually(() => pretty.includes(id) && uncoloured().includes(" 401 "), { what: "both access lines in the pretty log" });
    const plain = uncoloured();
    const line = plain.split("\n").find((l) => l.includes(id));
    expect(line, plain).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO gateway: GET /v1/organizations 200 \\d+ms ${t.organizationId} ${id}$`));
    expect(plain).toMatch(/ INFO gateway: GET \/v1\/organizations 401 \d+ms req_\S+\n/);
    expect(pretty).not.toContain(t.apiKey);
    expect(pretty).not.toContain("notAKeyButStillSecret");
  });
});

describe("logs of OAuth clients", () => {
  it("when a client is made, gets a token by Basic and by form, uses, inspects and revokes it, and is refused, then no line holds its secret or a token", async () => {
    const t = await f.tenant();
    const made = await gw.post(
      "/v1/oauth-clients",
      { name: "logged", scopes: ["tasks:read"] },
      { token: t.apiKey, headers: { "idempotency-key": "log-client" } },
    );
    expect(made.status, made.text).toBe(201);
    const { client_id, client_secret } = made.body as { client_id: string; client_secret: string };
    const form = (body: Record<string, string>, authorization?: string) =>
      gw.request("POST", body["token"] === undefined ? "/oauth/token" : "/oauth/introspect", {
        rawBody: new URLSearchParams(body).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded", ...(authorization ? { authorization } : {}) },
      });
    const basic = `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`;
    const byBasic = await form({ grant_type: "client_credentials" }, basic);
    const byForm = await form({ grant_type: "client_credentials", client_id, client_secret });
    expect([byBasic.status, byForm.status], byBasic.text).toEqual([200, 200]);
    const token = String(byBasic.body.access_token);
    expect((await gw.get("/v1/tasks", { token })).status).toBe(200);
    expect((await form({ token }, basic)).body.active).toBe(true);
    const revoked = await gw.request("POST", "/oauth/revoke", {
      rawBody: new URLSearchParams({ token }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic },
    });
    expect(revoked.status, revoked.text).toBe(200);
    expect((await gw.get("/v1/tasks", { token })).status).toBe(401);
    expect((await form({ grant_type: "client_credentials", client_id, client_secret: `${client_secret}x` })).status).toBe(401);
    await accessLines([made, byBasic, byForm, revoked].map((r) => r.headers.get("x-request-id") ?? ""));
    const all = JSON.stringify(lines);
    // Started without OAUTH_SIGNING_KEYS: it said so, once, as a warning.
    const warned = lines.filter((l) => l["service"] === "gateway" && String(l["msg"]).startsWith("OAUTH_SIGNING_KEYS is not set"));
    expect(warned.map((l) => l["level"])).toEqual([40]);
    expect(all).not.toContain(client_secret);
    expect(all).not.toContain(token);
    expect(all).not.toContain(String(byForm.body.access_token));
  });
});

/** Waits until the gateway has written the access line of every request named (it follows the response). */
async function accessLines(ids: string[]): Promise<Array<Record<string, unknown>>> {
  return eventually(() => {
    const found = ids.map((id) => lines.find((l) => l["service"] === "gateway" && l["msg"] === "request" && l["request_id"] === id));
    const missing = ids.filter((_, i) => found[i] === undefined);
    if (missing.length > 0) throw new Error(`no access line yet for ${missing.join(", ")}`);
    return found as Array<Record<string, unknown>>;
  });
}

describe("logs of upload and download links", () => {
  it("when links are used, refused, expired or mangled, then no line of any service holds a capability, and the access lines name the route pattern", async () => {
    const t = await f.tenant();
    const base = gatewayUrl;
    const sent: Array<{ what: string; id: string; status: number }> = [];
    const send = async (what: string, url: string, init?: RequestInit) => {
      const r = await fetch(url, init);
      await r.arrayBuffer();
      sent.push({ what, id: r.headers.get("x-request-id") ?? "", status: r.status });
      return r;
    };
    const task = await gw.post("/v1/tasks", { title: "with a file" }, { token: t.apiKey });
    expect(task.status, task.text).toBe(201);
    const started = await gw.post(
      `/v1/tasks/${task.body.id}/attachments/uploads`,
      { file_name: "a.txt", content_type: "text/plain", size: 3 },
      { token: t.apiKey },
    );
    expect(started.status, started.text).toBe(201);
    const uploadUrl = new URL(bodyOf(started, UploadTicket).upload_url);
    const upload = uploadUrl.pathname.slice("/v1/uploads/".length);
    const put = (what: string, path: string) => send(what, `${base}${path}`, { method: "PUT", body: "abc", headers: { "content-type": "text/plain" } });
    expect((await put("upload", `/v1/uploads/${upload}`)).status).toBe(200);
    expect((await put("upload again", `/v1/uploads/${upload}`)).status).toBe(409);
    const reg = await gw.post(
      `/v1/tasks/${task.body.id}/attachments`,
      { file_name: "a.txt", file_key: started.body.file_key, content_type: "text/plain", size: 3 },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(201);
    const link = await gw.get(`/v1/tasks/${task.body.id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
    expect(link.status, link.text).toBe(200);
    const download = new URL(bodyOf(link, DownloadLink).download_url).pathname.slice("/v1/downloads/".length);
    const tampered = `${download.slice(0, -2)}${download.endsWith("AA") ? "BB" : "AA"}`;
    const get = (what: string, path: string, init?: RequestInit) => send(what, `${base}${path}`, init);
    expect((await get("download", `/v1/downloads/${download}`)).status).toBe(200);
    expect((await get("download with a query", `/v1/downloads/${download}?x=1`)).status).toBe(200);
    expect((await get("tampered", `/v1/downloads/${tampered}`)).status).toBe(403);
    expect((await get("not a capability", "/v1/downloads/short")).status).toBe(403);
    expect((await get("a path below", `/v1/downloads/${download}/more`)).status).toBe(404);
    expect((await get("another case", `/V1/Downloads/${download}`)).status).toBe(404);
    expect((await get("doubled slashes", `//v1//downloads/${download}`)).status).toBe(404);
    expect((await get("encoded", `/v1/%64ownloads/${download}`)).status).toBeGreaterThanOrEqual(200);
    expect((await get("undecodable", `/v1/downloads/${download}%zz`)).status).toBe(400);
    expect((await get("another method", `/v1/downloads/${download}`, { method: "DELETE" })).status).toBe(405);
    expect((await get("a preflight", `/v1/uploads/${upload}`, { method: "OPTIONS" })).status).toBeGreaterThanOrEqual(200);
    // The link expires (2 s here): its refusals hold the capability as much as its successes.
    // Polled every 250 ms: the link routes are rate-limited per client address.
    await eventually(async () => expect((await get("expired", `/v1/downloads/${download}`)).status).toBe(403), {
      intervalMs: 250,
      what: "the download link to expire",
    });

    const access = await accessLines(sent.map((s) => s.id));
    for (const [i, line] of access.entries()) {
      const s = sent[i];
      expect(line, s?.what).toMatchObject({ status: s?.status, url: expect.stringMatching(/^\/v1\/(uploads|downloads)\/:capability$/) });
    }
    // Every line of every service, not only the access lines: the capability, or its signature alone.
    const all = JSON.stringify(lines);
    for (const capability of [upload, download, tampered]) {
      expect(capability.length).toBeGreaterThan(16);
      expect(all).not.toContain(capability);
      expect(all).not.toContain(capability.slice(capability.lastIndexOf(".") + 1));
    }
  });
});
