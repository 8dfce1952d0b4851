import { parseConfig } from "@tasksvc/config";
import { DEV_OAUTH_SIGNING_KEY, parseSigningKeys, type SigningKey } from "@tasksvc/secrets";
import { decodeProtectedHeader, exportJWK, generateKeyPair } from "jose";
import { describe, expect, it } from "vitest";
import { GatewayConfig } from "../src/config.js";
import { createOAuthIssuer } from "../src/oauth/issuer.js";

async function key(kid: string, alg: "ES256" | "EdDSA" = "ES256"): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid } as unknown as Record<string, string>;
  return { kid, alg, jwk };
}

const issuerWith = (keys: SigningKey[]) => createOAuthIssuer({ keys, issuer: () => "https://api.example.com", audience: "tasksvc-api" });
const claims = { sub: "usr_1", org_id: "org_1", client_id: "cli_1", scopes: ["tasks:read"] as const };

describe("OAUTH_SIGNING_KEYS", () => {
  it("when unset, then the development key signs and the setting says so", () => {
    const cfg = parseConfig(GatewayConfig, {});
    expect(cfg.OAUTH_SIGNING_KEYS.isDevKey).toBe(true);
    expect(cfg.OAUTH_SIGNING_KEYS.keys.map((k) => k.kid)).toEqual([DEV_OAUTH_SIGNING_KEY.kid]);
  });

  it("when a value is not a JSON array of private JWKs with distinct kids, then the process stops naming what is wrong, never the key", async () => {
    const good = await key("a");
    const { d: _d, ...publicOnly } = good.jwk;
    const cases: Array<[string, RegExp]> = [
      ["not json", /JSON array of private JWKs/],
      ["[]", /non-empty/],
      [JSON.stringify([{ ...good.jwk, kid: undefined }]), /needs a `kid`/],
      [JSON.stringify([good.jwk, good.jwk]), /appears twice/],
      [JSON.stringify([publicOnly]), /lacks the member "d"/],
      [JSON.stringify([{ ...good.jwk, kty: "oct" }]), /unsupported key type/],
      [JSON.stringify([{ ...good.jwk, alg: "ES512" }]), /says alg ES512/],
    ];
    for (const [value, why] of cases) {
      const parsed = parseSigningKeys(value);
      expect(parsed, value).toMatch(why);
      expect(() => parseConfig(GatewayConfig, { OAUTH_SIGNING_KEYS: value })).toThrow(/OAUTH_SIGNING_KEYS: .*not shown/);
    }
    expect(() => parseConfig(GatewayConfig, { OAUTH_SIGNING_KEYS: JSON.stringify([good.jwk]) })).not.toThrow();
  });

  it("when a key has every member but does not import (a point off the curve), then starting fails with the key's kid", async () => {
    const good = await key("bent");
    const bent = { ...good, jwk: { ...good.jwk, x: good.jwk["y"] as string } };
    await expect(issuerWith([bent])).rejects.toThrow(/OAUTH_SIGNING_KEYS: key "bent" could not be imported/);
  });
});

describe("the issuer of our own tokens", () => {
  it("when two keys are configured, then the first signs, both verify, and the key set lists only their public halves", async () => {
    const [next, old] = [await key("next", "EdDSA"), await key("old")];
    const signedByOld = await (await issuerWith([old])).sign(claims);
    const rotating = await issuerWith([next, old]);
    const fresh = await rotating.sign(claims);
    expect(decodeProtectedHeader(fresh.token)).toMatchObject({ kid: "next", alg: "EdDSA", typ: "at+jwt" });
    expect(fresh.expiresIn).toBe(3600);
    for (const t of [fresh.token, signedByOld.token]) {
      expect(await rotating.verify(t)).toMatchObject({
        sub: "usr_1",
        org_id: "org_1",
        client_id: "cli_1",
        scopes: ["tasks:read"],
        iss: "https://api.example.com",
      });
    }
    expect(rotating.jwks.keys.map((k) => k.kid)).toEqual(["next", "old"]);
    for (const k of rotating.jwks.keys) expect(Object.keys(k).filter((m) => ["d", "p", "q", "dp", "dq", "qi"].includes(m))).toEqual([]);
    // The old key removed: what it signed no longer verifies.
    await expect((await issuerWith([next])).verify(signedByOld.token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  it("when a token names another issuer or audience, then it does not verify", async () => {
    const k = await key("k");
    const token = (await issuerWith([k])).sign(claims);
    const other = await createOAuthIssuer({ keys: [k], issuer: () => "https://other.example.com", audience: "tasksvc-api" });
    await expect(other.verify((await token).token)).rejects.toMatchObject({ code: "invalid_token" });
    const otherAudience = await createOAuthIssuer({ keys: [k], issuer: () => "https://api.example.com", audience: "another-api" });
    await expect(otherAudience.verify((await token).token)).rejects.toMatchObject({ code: "invalid_token" });
  });
});
