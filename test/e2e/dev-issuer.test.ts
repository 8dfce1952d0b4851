import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { parseConfig } from "@tasksvc/config";
import { ensureDatabase, migrate } from "@tasksvc/db";
import { isAppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { secretBox } from "@tasksvc/secrets";
import { startService } from "@tasksvc/runtime";
import { api, dropDatabase, dropNamespace, factories, loadService, portOf } from "@tasksvc/testing";
import { exportJWK, exportSPKI, generateKeyPair, importJWK, type JWK, jwtVerify, SignJWT } from "jose";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

// The development OAuth issuer: its private key sealed under KEYS_SECRET_KEY, a warning at start
// in the process that signs (keys) and the one that trusts it (gateway), a plain key left by an
// older release sealed in place, and a deployment with a real issuer turning it off. Each case
// has a database and namespace of its own, since the signing key is one row per database.
const stack = inject("stack");
const KEYS_MIGRATIONS = fileURLToPath(new URL("../../services/keys/migrations", import.meta.url));
const DEV_WARNING = "OAUTH_JWKS_URL is not set";

type Line = Record<string, unknown>;
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** A fresh database and NATS namespace, dropped after the file. */
async function world(label: string) {
  const id = randomBytes(3).toString("hex");
  const url = new URL(stack.databaseUrl);
  url.pathname = `${url.pathname}_${label}_${id}`;
  const databaseUrl = url.toString();
  // A namespace has at most 32 characters.
  const namespace = `${stack.namespace}_${id}`;
  await ensureDatabase(databaseUrl);
  const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const f = factories({ ...stack, databaseUrl, namespace });
  cleanups.push(async () => {
    await f.close();
    await db.end({ timeout: 1 });
    await dropNamespace(stack.natsUrl, namespace);
    await dropDatabase(databaseUrl);
  });
  const env = { DATABASE_URL: databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: namespace, PORT: "0", OPS_PORT: "0", RPC_CHECK_REPLIES: "true" };
  return { databaseUrl, namespace, db, f, env };
}

/** Starts a replica of `name` whose log lines (info and up) land in `lines`. */
async function start(name: "keys" | "gateway", env: Record<string, string>, lines: Line[]) {
  const def = await loadService(name);
  const log = createLogger({
    service: name,
    level: "info",
    destination: {
      write(s: string) {
        for (const l of s.split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Line);
      },
    },
  });
  const running = await startService(def, parseConfig(def.config, env), log);
  cleanups.push(() => running.stop());
  const url = "url" in running && typeof running.url === "string" ? running.url : "";
  return { url };
}

const devWarnings = (lines: Line[]) => lines.filter((l) => String(l["msg"]).startsWith(DEV_WARNING));

async function refusal(p: Promise<unknown>) {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isAppError(e)) throw new Error(`expected an AppError, got ${String(e)}`);
  return e;
}

/** A key for KEYS_SECRET_KEY the test knows, so it can open what the service sealed. */
const newSecretKey = () => randomBytes(32).toString("base64");

/** What every sealed secret looks like: `v1.<iv>.<ciphertext‖tag>`, base64url. */
const SEALED = /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/;

describe("the development issuer, with no real issuer configured", () => {
  const keysLines: Line[] = [];
  const gatewayLines: Line[] = [];
  const secret = newSecretKey();
  let w: Awaited<ReturnType<typeof world>>;
  let gw: ReturnType<typeof api>;

  beforeAll(async () => {
    w = await world("dev");
    await start("keys", { ...w.env, KEYS_SECRET_KEY: secret }, keysLines);
    gw = api((await start("gateway", w.env, gatewayLines)).url);
  });

  it("when neither OAUTH_JWKS_URL nor OAUTH_PUBLIC_KEY is set, then the keys service and the gateway each warn once at start, naming what production sets", () => {
    for (const lines of [keysLines, gatewayLines]) {
      const warned = devWarnings(lines);
      expect(warned, JSON.stringify(lines)).toHaveLength(1);
      expect(warned[0]?.["level"]).toBe(40);
      expect(warned[0]?.["msg"]).toMatch(/development issuer.*set OAUTH_JWKS_URL \(your OAuth issuer's JWKS\) or OAUTH_PUBLIC_KEY outside development$/);
    }
  });

  it("when the development issuer makes its key pair, then the table holds the private key sealed under KEYS_SECRET_KEY, never plain, and the tokens it signs are accepted", async () => {
    const t = await w.f.tenant();
    const token = await w.f.token(t.organizationId, t.userId, ["workspaces:read"]);
    const r = await gw.get("/v1/organizations", { token });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data[0].id).toBe(t.organizationId);

    const rows = await w.db`select kid, private_jwk, private_key_sealed, public_jwk from keys.signing_keys`;
    expect(rows).toHaveLength(1);
    const row = rows[0] as { private_jwk: unknown; private_key_sealed: string; public_jwk: JWK };
    expect(row.private_jwk).toBeNull();
    expect(row.private_key_sealed).toMatch(SEALED);
    const privateJwk = JSON.parse(secretBox(secret, "KEYS_SECRET_KEY").open(row.private_key_sealed)) as JWK;
    expect(privateJwk).toMatchObject({ kty: "EC", crv: "P-256", kid: "dev-1" });
    // Neither the private scalar nor any JWK or PEM form of a private key is anywhere in the table.
    const dump = JSON.stringify(await w.db`select * from keys.signing_keys`);
    expect(dump).not.toContain(privateJwk.d as string);
    expect(dump).not.toMatch(/"d"\s*:|PRIVATE KEY/);
    // The sealed key is the one that signed the token.
    await expect(jwtVerify(token, await importJWK(row.public_jwk, "ES256"))).resolves.toBeDefined();
  });

  it("when the gateway is pointed at a real issuer's JWKS and the keys service is not, then the development issuer's tokens are refused there and the real issuer's accepted", async () => {
    const real = await generateKeyPair("ES256");
    const jwks = { keys: [{ ...(await exportJWK(real.publicKey)), kid: "real-1", alg: "ES256", use: "sig" }] };
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(jwks));
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    cleanups.push(() => new Promise<void>((ok) => server.close(() => ok())));
    const jwksUrl = `http://127.0.0.1:${portOf(server)}/.well-known/jwks.json`;
    // Same issuer and audience names as the development issuer, so only the signature differs.
    const lines: Line[] = [];
    const realGw = api((await start("gateway", { ...w.env, OAUTH_JWKS_URL: jwksUrl }, lines)).url);
    expect(devWarnings(lines)).toEqual([]);

    const t = await w.f.tenant();
    const devToken = await w.f.token(t.organizationId, t.userId, ["workspaces:read"]);
    expect((await gw.get("/v1/organizations", { token: devToken })).status).toBe(200);
    const refused = await realGw.get("/v1/organizations", { token: devToken });
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body.code).toBe("invalid_token");

    const realToken = await new SignJWT({ org_id: t.organizationId, scope: "workspaces:read" })
      .setProtectedHeader({ alg: "ES256", kid: "real-1", typ: "at+jwt" })
      .setIssuer("tasksvc-dev")
      .setAudience("tasksvc-api")
      .setSubject(t.userId)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(real.privateKey);
    const ok = await realGw.get("/v1/organizations", { token: realToken });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data[0].id).toBe(t.organizationId);
  });
});

describe("a private key stored plain by an older release", () => {
  const secret = newSecretKey();
  let w: Awaited<ReturnType<typeof world>>;
  let plain: { privateJwk: JWK; publicJwk: JWK };

  beforeAll(async () => {
    w = await world("legacy");
    // The schema as the release before sealing left it (its first two migrations), and the row
    // its development issuer wrote.
    const old = mkdtempSync(join(tmpdir(), "keys-migrations-"));
    cleanups.push(async () => rmSync(old, { recursive: true, force: true }));
    for (const f of ["0001_init.sql", "0002_idempotency.sql"]) copyFileSync(join(KEYS_MIGRATIONS, f), join(old, f));
    await migrate({ url: w.databaseUrl, schema: "keys", dir: old, log: createLogger({ service: "test", level: "silent" }) });
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    plain = {
      privateJwk: { ...(await exportJWK(privateKey)), kid: "dev-1", alg: "ES256" },
      publicJwk: { ...(await exportJWK(publicKey)), kid: "dev-1", alg: "ES256", use: "sig" },
    };
    await w.db`insert into keys.signing_keys (kid, private_jwk, public_jwk) values ('dev-1', ${w.db.json(plain.privateJwk as never)}, ${w.db.json(plain.publicJwk as never)})`;
  });

  it("when two upgraded replicas start together, then one seals it in place, and tokens signed with it before still verify, as do new ones", async () => {
    const lines: Line[] = [];
    await Promise.all([start("keys", { ...w.env, KEYS_SECRET_KEY: secret }, lines), start("keys", { ...w.env, KEYS_SECRET_KEY: secret }, lines)]);
    const sealedLines = lines.filter((l) => l["msg"] === "sealed the development issuer's signing key under KEYS_SECRET_KEY");
    expect(sealedLines, JSON.stringify(lines)).toHaveLength(1);
    expect(sealedLines[0]?.["sealed"]).toBe(1);

    const [row] = await w.db<{ private_jwk: unknown; private_key_sealed: string; public_jwk: JWK }[]>`select * from keys.signing_keys`;
    expect(row?.private_jwk).toBeNull();
    expect(row?.private_key_sealed).toMatch(SEALED);
    expect(JSON.parse(secretBox(secret, "KEYS_SECRET_KEY").open(row?.private_key_sealed as string))).toEqual(plain.privateJwk);
    expect(row?.public_jwk).toEqual(plain.publicJwk);

    const gw = api((await start("gateway", w.env, [])).url);
    const t = await w.f.tenant();
    // Signed as the older release's issuer did, with the key as it was stored.
    const before = await new SignJWT({ org_id: t.organizationId, scope: "workspaces:read" })
      .setProtectedHeader({ alg: "ES256", kid: "dev-1", typ: "at+jwt" })
      .setIssuer("tasksvc-dev")
      .setAudience("tasksvc-api")
      .setSubject(t.userId)
      .setJti("tok_before")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(await importJWK(plain.privateJwk, "ES256"));
    const r = await gw.get("/v1/organizations", { token: before });
    expect(r.status, r.text).toBe(200);

    const after = await w.f.token(t.organizationId, t.userId, ["workspaces:read"]);
    await expect(jwtVerify(after, await importJWK(plain.publicJwk, "ES256"))).resolves.toBeDefined();
    expect((await gw.get("/v1/organizations", { token: after })).status).toBe(200);
  });

  it("when KEYS_SECRET_KEY changes, then the development issuer warns, replaces its key pair sealed under the new key, and signs tokens the gateway accepts", async () => {
    // Another namespace on the same database: its admin calls reach only this replica.
    const namespace = `${w.namespace}r`;
    const env = { ...w.env, NATS_NAMESPACE: namespace };
    const f = factories({ ...stack, databaseUrl: w.databaseUrl, namespace });
    cleanups.push(async () => {
      await f.close();
      await dropNamespace(stack.natsUrl, namespace);
    });
    const rotated = newSecretKey();
    const lines: Line[] = [];
    await start("keys", { ...env, KEYS_SECRET_KEY: rotated }, lines);
    const gw = api((await start("gateway", env, [])).url);

    const t = await f.tenant();
    const token = await f.token(t.organizationId, t.userId, ["workspaces:read"]);
    expect(lines.filter((l) => String(l["msg"]).startsWith("the development issuer's signing key was sealed under another KEYS_SECRET_KEY"))).toHaveLength(1);
    const [row] = await w.db<{ private_key_sealed: string; public_jwk: JWK }[]>`select * from keys.signing_keys`;
    expect(JSON.parse(secretBox(rotated, "KEYS_SECRET_KEY").open(row?.private_key_sealed as string))).toMatchObject({ kid: "dev-1" });
    expect(row?.public_jwk).not.toEqual(plain.publicJwk);
    const r = await gw.get("/v1/organizations", { token });
    expect(r.status, r.text).toBe(200);
  });
});

describe("a deployment with a real issuer", () => {
  it("when the keys service has OAUTH_JWKS_URL, then the development issuer is off: no warning, no key pair made, issue-token refused; a gateway with OAUTH_PUBLIC_KEY accepts that key's tokens and does not warn", async () => {
    const w = await world("real");
    const keysLines: Line[] = [];
    const gatewayLines: Line[] = [];
    const real = await generateKeyPair("ES256", { extractable: true });
    await start("keys", { ...w.env, KEYS_SECRET_KEY: newSecretKey(), OAUTH_JWKS_URL: "https://issuer.example/.well-known/jwks.json" }, keysLines);
    const gw = api((await start("gateway", { ...w.env, OAUTH_PUBLIC_KEY: await exportSPKI(real.publicKey) }, gatewayLines)).url);
    expect(devWarnings(keysLines)).toEqual([]);
    expect(devWarnings(gatewayLines)).toEqual([]);

    const t = await w.f.tenant();
    const e = await refusal(w.f.token(t.organizationId, t.userId, ["workspaces:read"]));
    expect(e.code).toBe("feature_not_enabled");
    expect(e.detail).toContain("OAUTH_JWKS_URL");
    expect(await w.f.admin("devJwks", {})).toMatchObject({ keys: [] });
    expect((await w.db`select count(*)::int as n from keys.signing_keys`)[0]?.["n"]).toBe(0);

    const token = await new SignJWT({ org_id: t.organizationId, scope: "workspaces:read" })
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt" })
      .setIssuer("tasksvc-dev")
      .setAudience("tasksvc-api")
      .setSubject(t.userId)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(real.privateKey);
    const r = await gw.get("/v1/organizations", { token });
    expect(r.status, r.text).toBe(200);
  });
});
