import { createHmac, randomBytes } from "node:crypto";
import { api, eventually, factories, type StartedStack, startStack, type Tenant, gatewayUrl, problemOf } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Upload and download links through HTTP on a stack of their own: signed with keys from
// LINK_SIGNING_KEYS (here mid-rotation, the new key first, the previous one second), never a key
// from the database; their lifetime bounded; their downloads inert in a browser; their routes
// limited per client address. The gateway trusts loopback proxies here, so each test names its
// own client address in X-Forwarded-For and the limit of one test never meets another's.
const NEW_KEY = randomBytes(32);
const OLD_KEY = randomBytes(32);
const LIMIT = 5;
let stack: StartedStack;
let f: ReturnType<typeof factories>;
let sql: postgres.Sql;

beforeAll(async () => {
  stack = await startStack({
    env: {
      LINK_SIGNING_KEYS: `k2:${NEW_KEY.toString("base64")},k1:${OLD_KEY.toString("hex")}`,
      LINK_RATE_LIMIT: `${LIMIT}/3s`,
      TRUST_PROXY: "loopback",
    },
    replicas: { gateway: 1, keys: 1, tasks: 1, webhooks: 1 },
  });
  f = factories(stack);
  sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await f?.close();
  await stack?.stop();
});

let lastClient = 0;
/** A client address of its own (TEST-NET-2), so no two tests share a rate window. */
const newClient = () => `198.51.100.${++lastClient}`;

/** A link of this gateway (the path of the one handed out), fetched as `client`. */
function link(url: string, client: string, init: RequestInit = {}): Promise<Response> {
  const path = new URL(url).pathname;
  return fetch(new URL(path, stack.gatewayUrls[0]), { ...init, headers: { ...(init.headers as Record<string, string>), "x-forwarded-for": client } });
}

/** A registered attachment with these bytes, and a download link to it. */
async function attachment(t: Tenant, file: { name: string; type: string; body: string }): Promise<{ download_url: string }> {
  const gw = api(gatewayUrl(stack));
  const task = await gw.post("/v1/tasks", { title: "with a file" }, { token: t.apiKey });
  expect(task.status, task.text).toBe(201);
  const size = Buffer.byteLength(file.body);
  const s = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: file.name, content_type: file.type, size }, { token: t.apiKey });
  expect(s.status, s.text).toBe(201);
  const put = await link(s.body.upload_url, newClient(), { method: "PUT", body: file.body, headers: { "content-type": file.type } });
  expect(put.status, await put.text()).toBe(200);
  const reg = await gw.post(
    `/v1/tasks/${task.body.id}/attachments`,
    { file_name: file.name, file_key: s.body.file_key, content_type: file.type, size },
    { token: t.apiKey },
  );
  expect(reg.status, reg.text).toBe(201);
  const dl = await gw.get(`/v1/tasks/${task.body.id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
  expect(dl.status, dl.text).toBe(200);
  return dl.body;
}

/** The link's parts: key id, payload (decoded), and the path prefix to put a capability on. */
function partsOf(url: string): { kid: string; payload: Record<string, unknown>; base: string } {
  const capability = new URL(url).pathname.split("/").at(-1) ?? "";
  const [kid = "", text = ""] = capability.split(".");
  return { kid, payload: JSON.parse(Buffer.from(text, "base64url").toString("utf8")), base: url.slice(0, url.length - capability.length) };
}

/** A link as the tasks service signs one (`kid.payload.MAC` over `kid.payload`), under any key. */
function signed(base: string, kid: string, key: Buffer, payload: Record<string, unknown>): string {
  const text = `${kid}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
  return `${base}${text}.${createHmac("sha256", key).update(text).digest("base64url")}`;
}

async function code(res: Response): Promise<string> {
  return (await problemOf(res)).code;
}

describe("link signing keys", () => {
  it("when links are handed out mid-rotation, then they carry the new key id, and links under the previous key still open", async () => {
    const t = await f.tenant();
    const { download_url } = await attachment(t, { name: "notes.txt", type: "text/plain", body: "the notes" });
    const { kid, payload, base } = partsOf(download_url);
    expect(kid).toBe("k2");
    const fresh = await link(download_url, newClient());
    expect(fresh.status).toBe(200);
    expect(await fresh.text()).toBe("the notes");
    const previous = await link(signed(base, "k1", OLD_KEY, payload), newClient());
    expect(previous.status).toBe(200);
    expect(await previous.text()).toBe("the notes");
  });

  it("when a correctly signed link lives longer than the configured lifetime, then 403 link_invalid", async () => {
    const t = await f.tenant();
    const { download_url } = await attachment(t, { name: "notes.txt", type: "text/plain", body: "the notes" });
    const { payload, base } = partsOf(download_url);
    // DOWNLOAD_LINK_TTL is 5 minutes: one valid for a year is no link this service made.
    for (const [kid, key] of [
      ["k2", NEW_KEY],
      ["k1", OLD_KEY],
    ] as const) {
      const res = await link(signed(base, kid, key, { ...payload, expires_at: Date.now() + 365 * 86_400_000 }), newClient());
      expect(res.status, kid).toBe(403);
      expect(await code(res)).toBe("link_invalid");
    }
  });

  it("when a link is signed with a key that is not configured, or the way the key kept in the database signed, then 403 link_invalid", async () => {
    const t = await f.tenant();
    const { download_url } = await attachment(t, { name: "notes.txt", type: "text/plain", body: "the notes" });
    const { payload, base } = partsOf(download_url);
    const stranger = randomBytes(32);
    const unknownKey = await link(signed(base, "k2", stranger, payload), newClient());
    expect(unknownKey.status).toBe(403);
    expect(await code(unknownKey)).toBe("link_invalid");
    const unknownKid = await link(signed(base, "k3", stranger, payload), newClient());
    expect(unknownKid.status).toBe(403);
    // The former format: base64url(payload) "." HMAC under tasks.secrets' capability_key.
    const text = Buffer.from(JSON.stringify(payload)).toString("base64url");
    const legacy = await link(`${base}${text}.${createHmac("sha256", stranger).update(text).digest("base64url")}`, newClient());
    expect(legacy.status).toBe(403);
    expect(await code(legacy)).toBe("link_invalid");
    // And the database keeps no link key at all.
    const [row] = await sql<{ table: string | null }[]>`select to_regclass('tasks.secrets')::text as table`;
    expect(row?.table).toBeNull();
  });
});

describe("downloads", () => {
  it("when an HTML or SVG file with a script is downloaded, then it comes as an attachment that a browser will not sniff or run", async () => {
    const t = await f.tenant();
    for (const file of [
      { name: "page.html", type: "text/html", body: "<html><script>fetch('/v1/tasks')</script></html>" },
      { name: "image.svg", type: "image/svg+xml", body: '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>' },
    ]) {
      const { download_url } = await attachment(t, file);
      const res = await link(download_url, newClient());
      expect(res.status, file.name).toBe(200);
      expect(res.headers.get("content-type")).toBe(file.type);
      expect(res.headers.get("content-disposition")).toMatch(new RegExp(`^attachment; filename="${file.name.replace(".", "\\.")}"`));
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toBe("sandbox; default-src 'none'");
      expect(res.headers.get("cache-control")).toBe("private, no-store");
      expect(await res.text()).toBe(file.body);
    }
  });
});

describe("the link routes' limit per client address", () => {
  it("when an address makes more requests than the limit, then 429 rate_limited with Retry-After, on both routes; another address is served; after the window, so is the first", async () => {
    const client = newClient();
    const other = newClient();
    // Well-formed capabilities that open nothing: each is a request the tasks service refuses.
    const download = (from: string) => link(`http://x/v1/downloads/k2.${"a".repeat(40)}.${"b".repeat(43)}`, from);
    for (let i = 0; i < LIMIT; i++) expect((await download(client)).status).toBe(403);
    const over = await download(client);
    expect(over.status).toBe(429);
    expect(over.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers.get("retry-after"))).toBeLessThanOrEqual(3);
    expect(await over.json()).toMatchObject({ status: 429, code: "rate_limited" });
    const upload = await link(`http://x/v1/uploads/k2.${"a".repeat(40)}.${"b".repeat(43)}`, client, { method: "PUT", body: "x" });
    expect(upload.status).toBe(429);
    expect((await download(other)).status).toBe(403);
    await eventually(async () => expect((await download(client)).status).toBe(403), { intervalMs: 250, what: "the first address's window to pass" });
  });
});
