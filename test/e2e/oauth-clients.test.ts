import { createHash } from "node:crypto";
import { e2eContext, gatewayUrl, api } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { makeClient, tokenFor } from "./oauth-helpers.js";

// DESIGN section 17: the OAuth clients resource. Tokens and their endpoints: oauth-clients-tokens.test.ts.
const { gw, f, db, stack } = e2eContext();
const gw2 = api(gatewayUrl(stack, 1));

describe("POST /v1/oauth-clients", () => {
  it("when an owner creates a client, then 201 with the secret once; it is never in a list or a read, and only its SHA-256 hash is stored", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/oauth-clients", { name: "Nightly sync", scopes: ["tasks:read", "tasks:read", "projects:read"] }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ name: "Nightly sync", scopes: ["tasks:read", "projects:read"], created_by: t.userId });
    expect(r.body.id).toMatch(/^oac_[0-9A-Za-z]{22}$/);
    expect(r.body.client_id).toMatch(/^cli_[0-9A-Za-z]{22}$/);
    expect(r.body.client_secret).toMatch(/^oacs_[0-9A-Za-z]{43}$/);
    expect(r.headers.get("location")).toBe(`/v1/oauth-clients/${r.body.id}`);
    const secret: string = r.body.client_secret;

    const one = await gw.get(`/v1/oauth-clients/${r.body.id}`, { token: t.apiKey });
    expect(one.status, one.text).toBe(200);
    const { client_secret: _shown, ...rest } = r.body;
    expect(one.body).toEqual(rest);
    const list = await gw.get("/v1/oauth-clients", { token: t.apiKey });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data).toEqual([rest]);
    for (const text of [one.text, list.text]) expect(text).not.toContain(secret);

    const [row] = await db`select * from keys.oauth_clients where id = ${r.body.id}`;
    expect(row?.["secret_hash"]).toBe(createHash("sha256").update(secret).digest("hex"));
    expect(JSON.stringify(row)).not.toContain(secret);
    // The idempotency record, if any, holds it sealed only.
    const records = await db`select result::text as result from keys.idempotency where result::text like ${`%${r.body.id}%`}`;
    for (const rec of records) expect(rec["result"]).not.toContain(secret);
  });

  it("when a create is retried with the same Idempotency-Key, on another replica too, then the same client and the same secret answer, and no second client is made", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "client-once" };
    const first = await gw.post("/v1/oauth-clients", { name: "once", scopes: ["tasks:read"] }, { token: t.apiKey, headers });
    expect(first.status, first.text).toBe(201);
    const again = await gw2.post("/v1/oauth-clients", { name: "once", scopes: ["tasks:read"] }, { token: t.apiKey, headers });
    expect(again.status, again.text).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    const [n] = await db`select count(*)::int as n from keys.oauth_clients where organization_id = ${t.organizationId}`;
    expect(n?.["n"]).toBe(1);
    // The sealed record answers the very secret that works.
    await tokenFor(gw, first.body);
    const [record] = await db`select result::text as result from keys.idempotency where key = 'client-once' and result::text like ${`%${first.body.id}%`}`;
    expect(record?.["result"]).toContain("client_secret_sealed");
    expect(record?.["result"]).not.toContain(first.body.client_secret);
  });

  it("when a member (not an owner or admin) holds api-keys:manage, then 403 insufficient_scope; without the scope too", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId, "member");
    const token = await f.token(t.organizationId, member.userId, ["api-keys:manage"]);
    const r = await gw.post("/v1/oauth-clients", { name: "nope", scopes: ["tasks:read"] }, { token });
    expect(r.status, r.text).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
    const unscoped = await gw.get("/v1/oauth-clients", { token: member.apiKey });
    expect(unscoped.status, unscoped.text).toBe(403);
    expect(unscoped.body.code).toBe("insufficient_scope");
  });

  it("when the body lacks scopes, names an unknown one, or has an unknown field, then 400 naming the field", async () => {
    const t = await f.tenant();
    const cases: Array<[unknown, string]> = [
      [{ name: "x" }, "/scopes"],
      [{ name: "x", scopes: [] }, "/scopes"],
      [{ name: "x", scopes: ["tasks:delete"] }, "/scopes/0"],
      [{ name: " ", scopes: ["tasks:read"] }, "/name"],
      [{ name: "x", scopes: ["tasks:read"], secret: "mine" }, "/secret"],
    ];
    for (const [body, pointer] of cases) {
      const r = await gw.post("/v1/oauth-clients", body, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(
        r.body.errors.map((e: { pointer: string }) => e.pointer),
        r.text,
      ).toContain(pointer);
    }
  });

  it("when an organization holds 100 clients, then the 101st is 409 limit_reached, and deleting one makes room", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 100_000 });
    const made: string[] = [];
    for (let i = 0; i < 100; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) => gw.post("/v1/oauth-clients", { name: `c${i + j}`, scopes: ["tasks:read"] }, { token: t.apiKey })),
      );
      for (const r of batch) {
        expect(r.status, r.text).toBe(201);
        made.push(r.body.id);
      }
    }
    const refused = await gw.post("/v1/oauth-clients", { name: "one too many", scopes: ["tasks:read"] }, { token: t.apiKey });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe("limit_reached");
    expect(refused.body.detail).toMatch(/100/);
    expect((await gw.delete(`/v1/oauth-clients/${made[0]}`, { token: t.apiKey })).status).toBe(200);
    expect((await gw.post("/v1/oauth-clients", { name: "room", scopes: ["tasks:read"] }, { token: t.apiKey })).status).toBe(201);
  });
});

describe("GET and DELETE /v1/oauth-clients/{oauth_client_id}", () => {
  it("when another organization's client is read or deleted, then 404 and it keeps working", async () => {
    const [a, b] = [await f.tenant(), await f.tenant()];
    const c = await makeClient(gw, a, ["tasks:read"]);
    for (const r of [await gw.get(`/v1/oauth-clients/${c.id}`, { token: b.apiKey }), await gw.delete(`/v1/oauth-clients/${c.id}`, { token: b.apiKey })]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect((await gw.get("/v1/oauth-clients", { token: b.apiKey })).body.data).toEqual([]);
    await tokenFor(gw, c);
  });

  it("when a client is deleted, then 200 { id }, it is gone from reads, and a second delete is 404", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t);
    const del = await gw.delete(`/v1/oauth-clients/${c.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: c.id });
    expect((await gw.get(`/v1/oauth-clients/${c.id}`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.delete(`/v1/oauth-clients/${c.id}`, { token: t.apiKey })).status).toBe(404);
  });

  it("when the clients are listed in pages, then newest first with a cursor", async () => {
    const t = await f.tenant();
    const made = [];
    for (const name of ["first", "second", "third"]) made.push(await makeClient(gw, t, ["tasks:read"], name));
    const p1 = await gw.get("/v1/oauth-clients?limit=2", { token: t.apiKey });
    expect(p1.body.data.map((c: { name: string }) => c.name)).toEqual(["third", "second"]);
    expect(p1.body.has_more).toBe(true);
    const p2 = await gw.get(`/v1/oauth-clients?limit=2&after=${encodeURIComponent(p1.body.next_cursor)}`, { token: t.apiKey });
    expect(p2.body.data.map((c: { name: string }) => c.name)).toEqual(["first"]);
    expect(p2.body).toMatchObject({ has_more: false, next_cursor: null });
  });
});
