import { createHmac, timingSafeEqual } from "node:crypto";
import { AppError } from "@tasksvc/errors";
import { z } from "zod";

/**
 * The URL itself authorizes one upload or download, so it carries a MAC under a key only the
 * settings hold (LINK_SIGNING_KEYS), never the database: a copy of the database must not be
 * enough to mint a link. The key id lets a new key sign while the previous one's links still open
 * (decision 0016).
 */
const Payload = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("upload"), organization_id: z.string(), file_key: z.string(), expires_at: z.number().int() }),
  z.object({ kind: z.literal("download"), organization_id: z.string(), file_key: z.string(), attachment_id: z.string(), expires_at: z.number().int() }),
  z.object({ kind: z.literal("export"), organization_id: z.string(), file_key: z.string(), export_id: z.string(), expires_at: z.number().int() }),
]);
export type Capability = z.infer<typeof Payload>;
export type CapabilityKind = Capability["kind"];

/** Which kind a token claims to be, unverified: only to pick who verifies it. */
export function claimedKind(token: string): CapabilityKind | undefined {
  const text = token.split(".")[1];
  if (text === undefined) return undefined;
  try {
    const kind: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))?.kind;
    return kind === "upload" || kind === "download" || kind === "export" ? kind : undefined;
  } catch {
    return undefined;
  }
}

export const linkInvalid = () => new AppError("link_invalid", "This link is invalid or has expired; ask for a new one.");

export interface LinkKey {
  kid: string;
  key: Buffer;
}

/** DEVELOPMENT ONLY, so `make run` works out of the box: it is public, so anyone can mint links under it, and the service warns at start. */
export const DEV_LINK_SIGNING_KEYS = "dev:dGFza3N2Yy1ERVYtT05MWS1saW5rLXNpZ25pbmctMDA=";

const KID = /^[A-Za-z0-9_-]{1,32}$/;
const FORMAT_HINT =
  "a comma-separated list of <key id>:<key> entries, the signing key first (e.g. `k1:$(openssl rand -base64 32)`); key ids of letters, digits, _ and - (at most 32), each key 64 hex characters or base64 of 32 bytes";

/** Throws naming the entry at fault, never a key. */
export function parseLinkSigningKeys(value: string): LinkKey[] {
  const keys: LinkKey[] = [];
  for (const [i, raw] of value.split(",").entries()) {
    const entry = raw.trim();
    const colon = entry.indexOf(":");
    const kid = colon < 0 ? "" : entry.slice(0, colon);
    const material = colon < 0 ? "" : entry.slice(colon + 1).trim();
    if (!KID.test(kid)) throw new Error(`LINK_SIGNING_KEYS must be ${FORMAT_HINT}; entry ${i + 1} has no valid key id`);
    if (keys.some((k) => k.kid === kid)) throw new Error(`LINK_SIGNING_KEYS must be ${FORMAT_HINT}; key id "${kid}" appears twice`);
    const key = keyBytes(material);
    if (!key) throw new Error(`LINK_SIGNING_KEYS must be ${FORMAT_HINT}; the key of "${kid}" is not 32 bytes in hex or base64`);
    keys.push({ kid, key });
  }
  return keys;
}

function keyBytes(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (key.length === 32) return key;
  }
  return undefined;
}

export const linkSigningKeysSetting = z
  .string()
  .optional()
  .transform((value, ctx) => {
    try {
      return { keys: parseLinkSigningKeys(value ?? DEV_LINK_SIGNING_KEYS), isDevKey: value === undefined };
    } catch (e) {
      ctx.addIssue({ code: "custom", message: e instanceof Error ? e.message : String(e) });
      return z.NEVER;
    }
  });

/** The ticket's expiry comes from the database's clock and is checked against this replica's, which NTP keeps close. */
export const CLOCK_SKEW_MS = 30_000;

export interface CapabilityOptions {
  /** The signing key first; every one of them verifies. */
  keys: readonly LinkKey[];
  lifetimeMs: Record<CapabilityKind, number>;
  now?: () => number;
}

export function capabilities(o: CapabilityOptions) {
  const signer = o.keys[0];
  if (!signer) throw new Error("capabilities(): no signing key");
  const now = o.now ?? Date.now;
  const byKid = new Map(o.keys.map((k) => [k.kid, k.key]));
  const mac = (key: Buffer, text: string) => createHmac("sha256", key).update(text).digest();
  return {
    mint(c: Capability): string {
      const signed = `${signer.kid}.${Buffer.from(JSON.stringify(c)).toString("base64url")}`;
      return `${signed}.${mac(signer.key, signed).toString("base64url")}`;
    },

    verify<K extends CapabilityKind>(token: string, kind: K): Extract<Capability, { kind: K }> {
      const [kid, text, sig, extra] = token.split(".");
      if (kid === undefined || text === undefined || sig === undefined || extra !== undefined) throw linkInvalid();
      const key = byKid.get(kid);
      if (!key) throw linkInvalid();
      const given = Buffer.from(sig, "base64url");
      const expected = mac(key, `${kid}.${text}`);
      // Equal lengths first: timingSafeEqual throws otherwise (and the length is public anyway).
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw linkInvalid();
      let parsed: z.ZodSafeParseResult<Capability>;
      try {
        parsed = Payload.safeParse(JSON.parse(Buffer.from(text, "base64url").toString("utf8")));
      } catch {
        throw linkInvalid();
      }
      if (!parsed.success || parsed.data.kind !== kind) throw linkInvalid();
      const left = parsed.data.expires_at - now();
      if (left <= 0 || left > o.lifetimeMs[kind] + CLOCK_SKEW_MS) throw linkInvalid();
      return parsed.data as Extract<Capability, { kind: K }>;
    },
  };
}
export type Capabilities = ReturnType<typeof capabilities>;
