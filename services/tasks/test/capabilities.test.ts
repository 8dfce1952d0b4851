import { createHmac, randomBytes } from "node:crypto";
import { parseConfig } from "@tasksvc/config";
import { AppError } from "@tasksvc/errors";
import { describe, expect, it } from "vitest";
import {
  type Capability,
  capabilities,
  claimedKind,
  CLOCK_SKEW_MS,
  DEV_LINK_SIGNING_KEYS,
  parseLinkSigningKeys,
} from "../src/domain/attachments/capabilities.js";
import { TasksConfig } from "../src/service.js";

// Link signing keys and the checks a link passes, at the unit level: the whole path through HTTP
// is test/e2e/attachment-links.test.ts.
const NOW = 1_700_000_000_000;
const lifetimeMs = { upload: 15 * 60_000, download: 5 * 60_000, export: 24 * 3600_000 };
const k1 = { kid: "k1", key: randomBytes(32) };
const k2 = { kid: "k2", key: randomBytes(32) };
const caps = (keys = [k1]) => capabilities({ keys, lifetimeMs, now: () => NOW });
const download = (expires_at: number): Capability => ({
  kind: "download",
  organization_id: "org_a",
  file_key: "att/org_a/upl_1",
  attachment_id: "att_1",
  expires_at,
});

function refused(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
  throw new Error("expected a refusal");
}

describe("LINK_SIGNING_KEYS", () => {
  const env = (v?: string) => ({ DATABASE_URL: "postgres://localhost/x", ...(v === undefined ? {} : { LINK_SIGNING_KEYS: v }) });

  it("when unset, then the development key, marked so the service warns", () => {
    const cfg = parseConfig(TasksConfig, env());
    expect(cfg.LINK_SIGNING_KEYS).toEqual({ keys: parseLinkSigningKeys(DEV_LINK_SIGNING_KEYS), isDevKey: true });
    expect(cfg.LINK_SIGNING_KEYS.keys.map((k) => k.kid)).toEqual(["dev"]);
  });

  it("when several keys are given in hex or base64, then all are read in order, the first signing", () => {
    const hex = randomBytes(32);
    const b64 = randomBytes(32);
    const cfg = parseConfig(TasksConfig, env(`new:${hex.toString("hex")}, old_1:${b64.toString("base64")}`));
    expect(cfg.LINK_SIGNING_KEYS).toEqual({
      keys: [
        { kid: "new", key: hex },
        { kid: "old_1", key: b64 },
      ],
      isDevKey: false,
    });
  });

  it("when an entry has no key id, a short key, or a key id twice, then the process does not start and the message names the entry, never a key", () => {
    const key = randomBytes(32).toString("base64");
    for (const [value, says] of [
      [key, /entry 1 has no valid key id/],
      [`k1:${key},k2:c2hvcnQ=`, /the key of "k2" is not 32 bytes/],
      [`k1:${key},k1:${key}`, /key id "k1" appears twice/],
      [`k 1:${key}`, /entry 1 has no valid key id/],
    ] as const) {
      const r = TasksConfig.safeParse(env(value));
      expect(r.success, value).toBe(false);
      const message = r.error?.issues[0]?.message ?? "";
      expect(message).toMatch(/^LINK_SIGNING_KEYS must be a comma-separated list of <key id>:<key> entries/);
      expect(message).toMatch(says);
      expect(message).not.toContain(key);
    }
  });
});

describe("capabilities", () => {
  it("when minted, then the link names its key id and opens under the same keys", () => {
    const link = caps().mint(download(NOW + 60_000));
    expect(link.split(".")[0]).toBe("k1");
    expect(caps().verify(link, "download")).toEqual(download(NOW + 60_000));
  });

  it("when a link's expiry lies further ahead than its kind's lifetime, then it is refused though correctly signed", () => {
    const longest = NOW + lifetimeMs.download + CLOCK_SKEW_MS;
    expect(caps().verify(caps().mint(download(longest)), "download").expires_at).toBe(longest);
    expect(refused(() => caps().verify(caps().mint(download(longest + 1)), "download"))).toBe("link_invalid");
    expect(refused(() => caps().verify(caps().mint(download(NOW + 365 * 86_400_000)), "download"))).toBe("link_invalid");
    // An upload's lifetime is its own (15 minutes here, 5 for a download).
    const upload: Capability = { kind: "upload", organization_id: "org_a", file_key: "att/org_a/upl_1", expires_at: NOW + 10 * 60_000 };
    expect(caps().verify(caps().mint(upload), "upload")).toEqual(upload);
    expect(refused(() => caps().verify(caps().mint({ ...upload, expires_at: NOW + 16 * 60_000 }), "upload"))).toBe("link_invalid");
  });

  it("when a link is signed with a key that is not configured, then it is refused", () => {
    const stranger = caps([{ kid: "k1", key: randomBytes(32) }]).mint(download(NOW + 60_000));
    expect(refused(() => caps().verify(stranger, "download"))).toBe("link_invalid");
    const unknownKid = caps([{ kid: "k9", key: k1.key }]).mint(download(NOW + 60_000));
    expect(refused(() => caps().verify(unknownKid, "download"))).toBe("link_invalid");
  });

  it("when the keys rotate (the new key first, the previous second), then links signed by the previous key still open and new ones carry the new key id", () => {
    const before = caps([k1]).mint(download(NOW + 60_000));
    const rotated = caps([k2, k1]);
    expect(rotated.verify(before, "download").file_key).toBe("att/org_a/upl_1");
    const after = rotated.mint(download(NOW + 60_000));
    expect(after.split(".")[0]).toBe("k2");
    expect(rotated.verify(after, "download").file_key).toBe("att/org_a/upl_1");
    // Once the previous key is dropped, its links stop opening.
    expect(refused(() => caps([k2]).verify(before, "download"))).toBe("link_invalid");
  });

  it("when a link has the format of the key kept in the database (payload and MAC, no key id), then it is refused", () => {
    const dbKey = randomBytes(32);
    const text = Buffer.from(JSON.stringify(download(NOW + 60_000))).toString("base64url");
    const legacy = `${text}.${createHmac("sha256", dbKey).update(text).digest("base64url")}`;
    expect(refused(() => caps([{ kid: "k1", key: dbKey }]).verify(legacy, "download"))).toBe("link_invalid");
  });

  it("when an export's link is minted, then it opens as an export for its 24 hours, never as an attachment's download, and its kind is told before verifying", () => {
    const file: Capability = {
      kind: "export",
      organization_id: "org_a",
      file_key: "exp/org_a/exp_1.jsonl",
      export_id: "exp_1",
      expires_at: NOW + 24 * 3600_000,
    };
    const link = caps().mint(file);
    expect(caps().verify(link, "export")).toEqual(file);
    expect(refused(() => caps().verify(link, "download"))).toBe("link_invalid");
    expect(refused(() => caps().verify(caps().mint({ ...file, expires_at: NOW + 25 * 3600_000 }), "export"))).toBe("link_invalid");
    expect(claimedKind(link)).toBe("export");
    expect(claimedKind(caps().mint(download(NOW + 60_000)))).toBe("download");
    expect(claimedKind("k1.bm90IGpzb24.sig")).toBeUndefined();
    expect(claimedKind("nothing")).toBeUndefined();
  });
});
