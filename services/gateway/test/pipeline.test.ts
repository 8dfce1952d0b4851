import { PageQuery, boardsRpc, keysRpc, notificationsRpc, tasksRpc, webhooksRpc } from "@tasksvc/contracts";
import { createDb } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { client, connectNats, type NatsConnection } from "@tasksvc/nats";
import { Health } from "@tasksvc/telemetry";
import { factories } from "@tasksvc/testing";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { buildGateway } from "../src/app.js";
import { resource } from "../src/pipeline/resource.js";
import { resources } from "../src/routes/index.js";
import { createAuthenticator } from "../src/auth.js";
import { cursorCodec, signNextCursor } from "../src/pipeline/cursors.js";
import { createCharger } from "../src/pipeline/charger.js";
import { gatewayRepo } from "../src/repo/gateway-repo.js";
import { ownIssuer } from "./own-issuer.js";

const stack = inject("stack");
const f = factories(stack);
const log = createLogger({ service: "gateway-test", level: "silent" });
let nc: NatsConnection;
let app: FastifyInstance;
let slowApp: FastifyInstance;
let storeFailsApp: FastifyInstance;
const db = createDb({ url: stack.databaseUrl, schema: "gateway", max: 2 });
const sql = db.sql;

/** A paid-feature operation on the real pipeline (real NATS, real keys service). */
const gated = resource({ name: "test-only", scopes: "webhooks", entitlement: "outbound_webhooks" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/test-only/webhooks-feature",
      operationId: "testOnlyFeature",
      summary: "test only",
      query: PageQuery,
      response: PageQuery,
    },
    ({ clients, query, ctx }) => clients.keys.call("listOrganizations", query, ctx),
  );
});

/**
 * An upload: the body reaches the operation as the unread request stream (its resource's plugin
 * registers the media type), through the same hooks as every JSON operation.
 */
const uploads = resource({ name: "test-only-uploads", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/test-only/uploads",
      operationId: "testOnlyUpload",
      summary: "test only",
      kind: "stream",
      contentTypes: ["application/octet-stream"],
      status: 201,
      response: z.object({ bytes: z.number(), organization_id: z.string() }),
    },
    async ({ body, ctx }) => {
      let bytes = 0;
      for await (const chunk of body) bytes += Buffer.byteLength(chunk);
      return { bytes, organization_id: ctx.organization_id };
    },
  );
});

beforeAll(async () => {
  const oauthIssuer = await ownIssuer();
  nc = await connectNats({ url: stack.natsUrl, name: "gateway-pipeline-test" });
  const make = (namespace: string, timeoutMs: number, storeFails = false) => {
    const keys = client(nc, keysRpc, { namespace, timeoutMs });
    const tasks = client(nc, tasksRpc, { namespace, timeoutMs });
    const boards = client(nc, boardsRpc, { namespace, timeoutMs });
    const webhooks = client(nc, webhooksRpc, { namespace, timeoutMs });
    const notifications = client(nc, notificationsRpc, { namespace, timeoutMs });
    const auth = createAuthenticator({ nc, namespace, keys, log, issuer: "tasksvc-dev", audience: "tasksvc-api", cacheTtlMs: 5000, ours: oauthIssuer });
    const real = gatewayRepo(sql);
    // The gateway's database going away just as an outcome is stored (seen in the fault suite).
    const lost = () => Promise.reject(Object.assign(new Error("connection closed"), { code: "CONNECTION_CLOSED" }));
    const repo = storeFails ? { ...real, storeIdempotentOutcomes: lost } : real;
    return buildGateway({
      log,
      auth,
      clients: { keys, tasks, boards, webhooks, notifications },
      health: new Health(),
      bodyLimit: 1024 * 1024,
      repo,
      charger: createCharger({ repo, log }),
      cursors: cursorCodec("pipeline-test-secret"),
      idempotencyLeaseMs: 10_000,
      port: 8080,
      oauthIssuer,
      resources: [...resources, gated, uploads],
    });
  };
  app = make(stack.namespace, 5000);
  storeFailsApp = make(stack.namespace, 5000, true);
  // A namespace where no service listens: every call times out.
  slowApp = make(`${stack.namespace}_void`, 300);
});

afterAll(async () => {
  await app?.close();
  await slowApp?.close();
  await storeFailsApp?.close();
  await nc.drain();
  await db.end({ timeout: 1 });
  await f.close();
});

describe("plan entitlements", () => {
  it("when a free plan calls an outbound_webhooks operation, then 403 feature_not_enabled", async () => {
    const t = await f.tenant("free");
    const r = await app.inject({ method: "GET", url: "/v1/test-only/webhooks-feature", headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(r.statusCode, r.body).toBe(403);
    expect(r.json()).toMatchObject({ code: "feature_not_enabled", status: 403 });
  });

  it("when a pro plan calls it, then it is forwarded", async () => {
    const t = await f.tenant("pro");
    const r = await app.inject({ method: "GET", url: "/v1/test-only/webhooks-feature", headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(r.statusCode, r.body).toBe(200);
  });

  it("when the plan changes to free, then the next request is refused (cached identity invalidated)", async () => {
    const t = await f.tenant("pro");
    const call = () => app.inject({ method: "GET", url: "/v1/test-only/webhooks-feature", headers: { authorization: `Bearer ${t.apiKey}` } });
    expect((await call()).statusCode).toBe(200);
    await f.admin("setPlan", { org: t.organizationId, plan: "free" });
    const r = await call();
    expect(r.statusCode, r.body).toBe(403);
    expect(r.json().code).toBe("feature_not_enabled");
  });
});

describe("a streamed upload operation", () => {
  const upload = (headers: Record<string, string>, payload: Buffer | string) =>
    app.inject({ method: "POST", url: "/v1/test-only/uploads", headers: { "content-type": "application/octet-stream", ...headers }, payload });

  it("when it is called with a credential, then the operation reads the body as a stream and the call is charged", async () => {
    const t = await f.tenant();
    const payload = Buffer.alloc(256 * 1024, 7);
    const r = await upload({ authorization: `Bearer ${t.apiKey}` }, payload);
    expect(r.statusCode, r.body).toBe(201);
    expect(r.json()).toEqual({ bytes: payload.length, organization_id: t.organizationId });
    expect(r.headers["x-ratelimit-remaining"]).toBeDefined();
  });

  it("when it is called without a credential, then 401 before the body is read", async () => {
    const r = await upload({}, "abc");
    expect(r.statusCode, r.body).toBe(401);
    expect(r.json().code).toBe("missing_credentials");
  });

  it("when it is called without its scope, then 403 insufficient_scope", async () => {
    const t = await f.tenant("team");
    const token = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    const r = await upload({ authorization: `Bearer ${token}` }, "abc");
    expect(r.statusCode, r.body).toBe(403);
    expect(r.json().code).toBe("insufficient_scope");
  });

  it("when it is sent JSON, then 415 and the JSON operations elsewhere still refuse octet-stream", async () => {
    const t = await f.tenant();
    const json = await app.inject({
      method: "POST",
      url: "/v1/test-only/uploads",
      headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" },
      payload: "{}",
    });
    expect(json.statusCode, json.body).toBe(415);
    expect(json.json().code).toBe("unsupported_media_type");
    const task = await app.inject({
      method: "POST",
      url: "/v1/tasks",
      headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/octet-stream" },
      payload: "x",
    });
    expect(task.statusCode, task.body).toBe(415);
  });
});

describe("an Idempotency-Key outcome that cannot be stored", () => {
  const mint = (t: { apiKey: string }, body: unknown, key: string) =>
    storeFailsApp.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json", "idempotency-key": key },
      payload: JSON.stringify(body),
    });

  it("when the operation succeeded but its outcome cannot be stored, then 503 problem+json to retry with the same key, and the retry gets the same key back", async () => {
    const t = await f.tenant();
    const r = await mint(t, { name: "stored elsewhere" }, "store-fails-1");
    expect(r.statusCode, r.body).toBe(503);
    expect(r.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(r.headers["retry-after"]).toBe("1");
    expect(r.json()).toMatchObject({ code: "service_unavailable", status: 503 });
    // The keys service recorded the key with the minted key: the retry through a healthy
    // gateway answers it, not a second key.
    const retry = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { authorization: `Bearer ${t.apiKey}`, "content-type": "application/json", "idempotency-key": "store-fails-1" },
      payload: JSON.stringify({ name: "stored elsewhere" }),
    });
    expect(retry.statusCode, retry.body).toBe(201);
    const listed = await app.inject({ method: "GET", url: "/v1/api-keys?limit=100", headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(listed.json().data.filter((k: { name: string | null }) => k.name === "stored elsewhere")).toHaveLength(1);
  });

  it("when the request was refused (400) but the refusal cannot be stored, then 503 problem+json, never fastify's own error body", async () => {
    const t = await f.tenant();
    const r = await mint(t, { name: "" }, "store-fails-2");
    expect(r.statusCode, r.body).toBe(503);
    expect(r.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(r.json()).toMatchObject({ code: "service_unavailable" });
    expect(r.json().request_id).toBe(r.headers["x-request-id"]);
  });
});

describe("service timeouts", () => {
  it("when no service answers in time, then 503 service_unavailable with Retry-After, not a hang", async () => {
    const r = await slowApp.inject({
      method: "GET",
      url: "/v1/organizations",
      headers: { authorization: "Bearer svc_live_whatever000000000000000000000000000" },
    });
    expect(r.statusCode, r.body).toBe(503);
    expect(r.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(r.headers["retry-after"]).toBe("1");
    expect(r.json()).toMatchObject({ code: "service_unavailable" });
    expect(r.json().request_id).toBe(r.headers["x-request-id"]);
  });
});

describe("signNextCursor (a relayed page's cursor, signed on its bytes)", () => {
  const sign = (raw: string) => `signed(${raw})`;
  const run = (page: unknown) => JSON.parse(signNextCursor(Buffer.from(JSON.stringify(page)), sign).toString("utf8")) as unknown;
  it("when a page has a next cursor, then only that value is replaced, whatever the items hold", () => {
    const tricky = { id: "T-1", title: 'say "next_cursor": "x" \\ \u00e9', notes: '","next_cursor":"evil' };
    expect(run({ data: [tricky], has_more: true, next_cursor: 'k\\"1' })).toEqual({ data: [tricky], has_more: true, next_cursor: 'signed(k\\"1)' });
    expect(run({ data: [], next_cursor: "abc", has_more: true })).toEqual({ data: [], next_cursor: "signed(abc)", has_more: true });
  });
  it("when the cursor is null or absent, then the body is left as it is", () => {
    const last = Buffer.from(JSON.stringify({ data: [{ title: '"next_cursor":"x"' }], has_more: false, next_cursor: null }));
    expect(signNextCursor(last, sign)).toBe(last);
    const none = Buffer.from(JSON.stringify({ id: "T-1" }));
    expect(signNextCursor(none, sign)).toBe(none);
  });
});
