import { request as httpRequest } from "node:http";
import { e2eContext, startExtraGateway, type Tenant, gatewayUrl, bodyOf } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DownloadLink, UploadTicket } from "@tasksvc/contracts";

// The links the gateway hands out (upload and download), a problem's `type` and the document's
// `servers` are built on PUBLIC_BASE_URL; without it, links and types on http://localhost:<port>
// and `servers` on `/` (the origin the document was fetched from, resolved by the client): never on
// the Host (or X-Forwarded-Host, or Forwarded) a client sends, which would let anyone have links to
// a host of their choosing handed out under the API's name.
const { stack, f } = e2eContext();
const stackGateway = new URL(gatewayUrl(stack));
const DEFAULT_BASE = `http://localhost:${stackGateway.port}`;
/** Every header a client could use to name another host, sent with every request below. */
const STEERING = {
  host: "attacker.example",
  "x-forwarded-host": "attacker.example",
  "x-forwarded-proto": "https",
  forwarded: "host=attacker.example;proto=https",
};

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: parsed response bodies, asserted field by field
  body: any;
}

/** A JSON request to `gateway` carrying STEERING (fetch would send the URL's own Host). */
function send(gateway: URL, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = { ...STEERING, ...opts.headers };
  if (opts.token) headers["authorization"] = `Bearer ${opts.token}`;
  if (payload !== undefined) headers["content-type"] = "application/json";
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: gateway.hostname, port: gateway.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on("error", reject);
    req.end(payload);
  });
}

/**
 * Creates a task with a 3-byte file through `gateway` and answers the links and problems it
 * handed out, each request naming another host. `reach` maps a link to where the test can send it.
 */
async function linksAndProblems(gateway: URL, t: Tenant, reach: (link: string) => string) {
  const task = await send(gateway, "POST", "/v1/tasks", { token: t.apiKey, body: { title: "with a file" } });
  expect(task.status, JSON.stringify(task.body)).toBe(201);
  const started = await send(gateway, "POST", `/v1/tasks/${task.body.id}/attachments/uploads`, {
    token: t.apiKey,
    body: { file_name: "a.txt", content_type: "text/plain", size: 3 },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const put = await fetch(reach(started.body.upload_url), { method: "PUT", body: "abc", headers: { "content-type": "text/plain" } });
  expect(put.status, await put.text()).toBe(200);
  const reg = await send(gateway, "POST", `/v1/tasks/${task.body.id}/attachments`, {
    token: t.apiKey,
    body: { file_name: "a.txt", file_key: started.body.file_key, content_type: "text/plain", size: 3 },
  });
  expect(reg.status, JSON.stringify(reg.body)).toBe(201);
  const link = await send(gateway, "GET", `/v1/tasks/${task.body.id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
  expect(link.status, JSON.stringify(link.body)).toBe(200);
  const got = await fetch(reach(link.body.download_url));
  expect(await got.text()).toBe("abc");

  // Problems from the router, from authentication, from an operation's input, and one stored
  // under an Idempotency-Key and replayed.
  const noRoute = await send(gateway, "GET", "/v1/nothing-here");
  const anonymous = await send(gateway, "GET", "/v1/tasks");
  const once = { token: t.apiKey, body: { title: "" }, headers: { "idempotency-key": `empty-title-${task.body.id}` } };
  const invalid = await send(gateway, "POST", "/v1/tasks", once);
  const replayed = await send(gateway, "POST", "/v1/tasks", { ...once, headers: { ...once.headers, host: "elsewhere.example" } });
  const doc = await send(gateway, "GET", "/v1/openapi.json");
  return {
    uploadUrl: bodyOf(started, UploadTicket).upload_url,
    downloadUrl: bodyOf(link, DownloadLink).download_url,
    types: [noRoute, anonymous, invalid, replayed].map((p) => `${p.status} ${p.body.type}`),
    servers: doc.body.servers,
  };
}

describe("the base of links and problem types", () => {
  it("when PUBLIC_BASE_URL is unset and a request names another host, then links and problem types are on localhost at the gateway's port, and servers is relative", async () => {
    const t = await f.tenant();
    const got = await linksAndProblems(stackGateway, t, (link) => link);
    expect(got.uploadUrl.startsWith(`${DEFAULT_BASE}/v1/uploads/`), got.uploadUrl).toBe(true);
    expect(got.downloadUrl.startsWith(`${DEFAULT_BASE}/v1/downloads/`), got.downloadUrl).toBe(true);
    expect(got.types).toEqual([
      `404 ${DEFAULT_BASE}/docs/errors#route_not_found`,
      `401 ${DEFAULT_BASE}/docs/errors#missing_credentials`,
      `400 ${DEFAULT_BASE}/docs/errors#validation_failed`,
      `400 ${DEFAULT_BASE}/docs/errors#validation_failed`,
    ]);
    expect(got.servers).toEqual([{ url: "/", description: "This gateway" }]);
  });

  describe("with PUBLIC_BASE_URL set", () => {
    const PUBLIC = "https://api.example.test";
    let gateway: URL;
    let stop: () => Promise<void> = async () => {};
    beforeAll(async () => {
      // One more gateway replica on the run's stack; the setting's trailing slash is dropped.
      const extra = await startExtraGateway(stack, { PUBLIC_BASE_URL: `${PUBLIC}/` });
      stop = extra.stop;
      gateway = extra.url;
    });
    afterAll(() => stop());

    it("when a request names another host, then links, problem types and servers are on PUBLIC_BASE_URL", async () => {
      const t = await f.tenant();
      // The links name the public URL; the test sends them to this replica's own address.
      const got = await linksAndProblems(gateway, t, (link) => link.replace(PUBLIC, gateway.origin));
      expect(got.uploadUrl.startsWith(`${PUBLIC}/v1/uploads/`), got.uploadUrl).toBe(true);
      expect(got.downloadUrl.startsWith(`${PUBLIC}/v1/downloads/`), got.downloadUrl).toBe(true);
      expect(got.types).toEqual([
        `404 ${PUBLIC}/docs/errors#route_not_found`,
        `401 ${PUBLIC}/docs/errors#missing_credentials`,
        `400 ${PUBLIC}/docs/errors#validation_failed`,
        `400 ${PUBLIC}/docs/errors#validation_failed`,
      ]);
      expect(got.servers).toEqual([{ url: PUBLIC, description: "This gateway" }]);
    });
  });
});
