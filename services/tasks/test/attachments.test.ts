import { actorOf } from "@tasksvc/contracts";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { Objm } from "@nats-io/obj";
import { attachmentsBucket, natsBlobStore, type BlobStore } from "@tasksvc/blobs";
import type { Caller, RpcContext } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { connectNats, type NatsConnection } from "@tasksvc/nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { capabilities } from "../src/domain/attachments/capabilities.js";
import { attachmentsSystem } from "../src/domain/attachments/system.js";
import { tasksResources } from "../src/domain/resources.js";
import { attachmentsRepo } from "../src/repo/attachments-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// Attachments against a schema of their own and a JetStream object store bucket of their own (no
// tasks service runs on either), so every ticket, object and sweep below is this file's doing.
const stack = inject("stack");
const SCHEMA = "tasks_attachments_test";
const BUCKET_NS = `${stack.namespace}_att_test`;
const log = createLogger({ service: "attachments-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 8 });
const sql = db.sql;
const lifetimeMs = { upload: 15 * 60_000, download: 5 * 60_000, export: 24 * 3600_000 };
const caps = capabilities({ keys: [{ kid: "k1", key: randomBytes(32) }], lifetimeMs });
let nc: NatsConnection;
let store: BlobStore;

const service = (uploadTtlMs = 15 * 60_000) => attachmentsSystem(tasksResources(db, { log }), { store, caps, uploadTtlMs, downloadTtlMs: 5 * 60_000 });
let svc: ReturnType<typeof service>;

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  nc = await connectNats({ url: stack.natsUrl, name: "attachments-test" });
  store = await natsBlobStore(nc, BUCKET_NS);
  svc = service();
});

afterAll(async () => {
  await (await new Objm(nc).open(attachmentsBucket(BUCKET_NS))).destroy();
  await nc.drain();
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

/** A new organization with task T-1 (inserted directly: the task service's creates are not under test). */
async function tenant(): Promise<string> {
  const org = newId("org");
  await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, created_at, updated_at)
    values (${org}, 1, 'usr_t', ${newId("ver")}, 3, 'with files', 'TODO', now(), now())`;
  return org;
}

const caller = (org: string, key?: string): Caller => {
  const ctx: RpcContext = {
    request_id: newId("req"),
    organization_id: org,
    user_id: "usr_t",
    credential_id: "key_att_test",
    scopes: ["tasks:write"],
    plan: "pro",
    ...(key === undefined ? {} : { idempotency_key: key }),
  };
  return { organizationId: org, userId: "usr_t", credentialId: "key_att_test", idempotencyKey: key, actor: actorOf(ctx), ctx };
};

const limits = (max_file_size: number, storage: number) => ({ max_file_size, storage });
const file = (size: number) => ({ file_name: "report.pdf", content_type: "application/pdf", size });
const MB = 1_000_000;

/** The AppError a call failed with (the test fails when it succeeded or failed otherwise). */
async function refusal(p: Promise<unknown>): Promise<{ code: string; pointer: string | undefined; detail: string }> {
  const r = await p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  );
  if (r.ok) throw new Error(`expected a refusal, got ${JSON.stringify(r.v)}`);
  if (!(r.e instanceof AppError)) throw r.e;
  return { code: r.e.code, pointer: r.e.errors?.[0]?.pointer, detail: r.e.detail };
}

const capabilityOf = (t: { target: { kind: string; capability?: string } }): string => {
  if (t.target.kind !== "gateway" || t.target.capability === undefined) throw new Error(`expected a gateway target: ${JSON.stringify(t)}`);
  return t.target.capability;
};

/** What the gateway's PUT route does with a claimed ticket: the bytes into the store. */
const upload = (fileKey: string, bytes: Buffer, contentType = "application/pdf") =>
  store.put(fileKey, Readable.from([bytes]), { size: bytes.length, contentType });

async function attached(org: string, size: number, name = "report.pdf") {
  const t = await svc.startUpload(caller(org), "T-1", { ...file(size), file_name: name }, limits(MB, 10 * MB));
  await upload(t.file_key, randomBytes(size));
  return svc.registerAttachment(caller(org), "T-1", { ...file(size), file_name: name, file_key: t.file_key });
}

const ticketState = async (fileKey: string) => (await sql<{ state: string }[]>`select state from uploads where file_key = ${fileKey}`)[0]?.state ?? null;

describe("upload-start limits", () => {
  it("when the size is exactly the plan's largest file, then it is accepted; one byte more is 400 at /size", async () => {
    const org = await tenant();
    const ok = await svc.startUpload(caller(org), "T-1", file(1000), limits(1000, 10_000));
    expect(ok.file_key).toMatch(new RegExp(`^att/${org}/upl_`));
    expect(await ticketState(ok.file_key)).toBe("open");
    const no = await refusal(svc.startUpload(caller(org), "T-1", file(1001), limits(1000, 10_000)));
    expect(no).toEqual({ code: "validation_failed", pointer: "/size", detail: "/size exceeds the plan's largest file, 1000 bytes" });
  });

  it("when open reservations and used bytes plus the size reach the allowance exactly, then accepted; one byte past is 400 at /size", async () => {
    const org = await tenant();
    await attached(org, 30); // 30 used
    await svc.startUpload(caller(org), "T-1", file(50), limits(MB, 100)); // 50 reserved
    const exact = await svc.startUpload(caller(org), "T-1", file(20), limits(MB, 100));
    expect(await ticketState(exact.file_key)).toBe("open");
    const no = await refusal(svc.startUpload(caller(org), "T-1", file(1), limits(MB, 100)));
    expect(no.pointer).toBe("/size");
    expect(no.detail).toBe("/size the organization's storage allowance of 100 bytes would be exceeded (100 used or reserved)");
  });

  it("when a reservation has expired, then it no longer counts", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(80), limits(MB, 100));
    expect((await refusal(svc.startUpload(caller(org), "T-1", file(30), limits(MB, 100)))).pointer).toBe("/size");
    await sql`update uploads set expires_at = now() - interval '1 second' where file_key = ${t.file_key}`;
    await expect(svc.startUpload(caller(org), "T-1", file(30), limits(MB, 100))).resolves.toHaveProperty("file_key");
  });

  it("when two starts together would exceed the allowance, then exactly one succeeds", async () => {
    for (let round = 0; round < 5; round++) {
      const other = await tenant();
      const rs = await Promise.allSettled([
        svc.startUpload(caller(other), "T-1", file(60), limits(MB, 100)),
        svc.startUpload(caller(other), "T-1", file(60), limits(MB, 100)),
      ]);
      expect(rs.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const failed = rs.find((r) => r.status === "rejected");
      expect(failed?.status === "rejected" && failed.reason instanceof AppError && failed.reason.errors?.[0]?.pointer).toBe("/size");
    }
  });

  it("when the task is unknown or another organization's, then 404", async () => {
    const org = await tenant();
    const other = await tenant();
    expect((await refusal(svc.startUpload(caller(org), "T-2", file(1), limits(MB, MB)))).code).toBe("resource_not_found");
    expect((await refusal(svc.startUpload(caller(org), "nonsense", file(1), limits(MB, MB)))).code).toBe("resource_not_found");
    await sql`delete from tasks where organization_id = ${other}`;
    expect((await refusal(svc.startUpload(caller(other), "T-1", file(1), limits(MB, MB)))).code).toBe("resource_not_found");
  });

  it("when an upload-start is replayed under its Idempotency-Key, then the same ticket, and no second reservation", async () => {
    const org = await tenant();
    const a = await svc.startUpload(caller(org, "ik-1"), "T-1", file(60), limits(MB, 100));
    const b = await svc.startUpload(caller(org, "ik-1"), "T-1", file(60), limits(MB, 100));
    expect(b).toEqual(a);
    const [n] = await sql<{ n: number }[]>`select count(*)::int as n from uploads where organization_id = ${org}`;
    expect(n?.n).toBe(1);
  });
});

describe("upload capabilities", () => {
  it("when a capability is tampered with, then link_invalid; an authentic one claims the ticket", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(5), limits(MB, MB));
    const cap = capabilityOf(t);
    const [kid, payload, sig] = cap.split(".");
    const forged = Buffer.from(
      JSON.stringify({ kind: "upload", organization_id: newId("org"), file_key: t.file_key, expires_at: Date.now() + 60_000 }),
    ).toString("base64url");
    for (const bad of [`${kid}.${forged}.${sig}`, `${kid}.${payload}.${sig?.slice(0, -2)}AA`, `${kid}.${payload}`, "", `${kid}.${payload}.${sig}.x`]) {
      expect((await refusal(svc.claimUpload(bad))).code, bad).toBe("link_invalid");
    }
    // A download capability does not open an upload.
    const other = capabilities({ keys: [{ kid: "k1", key: randomBytes(32) }], lifetimeMs }).mint({
      kind: "upload",
      organization_id: org,
      file_key: t.file_key,
      expires_at: Date.now() + 60_000,
    });
    expect((await refusal(svc.claimUpload(other))).code).toBe("link_invalid");
    expect(await svc.claimUpload(cap)).toEqual({ file_key: t.file_key, size: 5, content_type: "application/pdf" });
  });

  it("when a capability or its ticket has expired, then link_invalid", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(5), limits(MB, MB));
    const expired = caps.mint({ kind: "upload", organization_id: org, file_key: t.file_key, expires_at: Date.now() - 1 });
    expect((await refusal(svc.claimUpload(expired))).code).toBe("link_invalid");
    await sql`update uploads set expires_at = now() - interval '1 second' where file_key = ${t.file_key}`;
    expect((await refusal(svc.claimUpload(capabilityOf(t)))).code).toBe("link_invalid");
    expect(await ticketState(t.file_key)).toBe("open");
  });

  it("when a ticket is claimed twice, then the second is upload_already_received; after a release it is claimed again", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(5), limits(MB, MB));
    const cap = capabilityOf(t);
    await svc.claimUpload(cap);
    expect(await ticketState(t.file_key)).toBe("receiving");
    expect((await refusal(svc.claimUpload(cap))).code).toBe("upload_already_received");
    expect(await svc.releaseUpload(t.file_key, "org_someone_else")).toEqual({ released: false });
    expect(await svc.releaseUpload(t.file_key, org)).toEqual({ released: true });
    expect(await svc.releaseUpload(t.file_key, org)).toEqual({ released: false });
    expect(await ticketState(t.file_key)).toBe("open");
    await expect(svc.claimUpload(cap)).resolves.toHaveProperty("file_key", t.file_key);
  });

  it("when a claim's lease has run out (its gateway died mid-upload), then a retry claims it; once completed, no PUT can", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(5), limits(MB, MB));
    const cap = capabilityOf(t);
    await svc.claimUpload(cap);
    expect((await refusal(svc.claimUpload(cap))).code).toBe("upload_already_received");
    await sql`update uploads set receiving_until = now() - interval '1 second' where file_key = ${t.file_key}`;
    await expect(svc.claimUpload(cap)).resolves.toHaveProperty("file_key", t.file_key);
    expect(await svc.completeUpload(t.file_key, org)).toEqual({ completed: true });
    expect(await ticketState(t.file_key)).toBe("received");
    await sql`update uploads set receiving_until = now() - interval '1 second' where file_key = ${t.file_key}`;
    expect((await refusal(svc.claimUpload(cap))).code).toBe("upload_already_received");
  });

  it("when two claims race, then exactly one takes the ticket", async () => {
    const org = await tenant();
    const cap = capabilityOf(await svc.startUpload(caller(org), "T-1", file(5), limits(MB, MB)));
    const rs = await Promise.allSettled([svc.claimUpload(cap), svc.claimUpload(cap), svc.claimUpload(cap)]);
    expect(rs.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });
});

describe("registration", () => {
  it("when no object was uploaded, or one of another size, then 400 at /file_key; with the bytes, the attachment", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(5), limits(MB, MB));
    const body = { ...file(5), file_key: t.file_key };
    const missing = await refusal(svc.registerAttachment(caller(org), "T-1", body));
    expect(missing).toMatchObject({ code: "validation_failed", pointer: "/file_key" });
    expect(missing.detail).toMatch(/no uploaded object of that size/);
    await upload(t.file_key, Buffer.from("abc"));
    expect(await refusal(svc.registerAttachment(caller(org), "T-1", body))).toMatchObject({ pointer: "/file_key" });
    await upload(t.file_key, Buffer.from("abcde"));
    const a = await svc.registerAttachment(caller(org), "T-1", body);
    expect(a).toEqual({
      id: expect.stringMatching(/^att_/),
      file_name: "report.pdf",
      content_type: "application/pdf",
      size: 5,
      created_at: expect.any(String),
    });
    expect(await ticketState(t.file_key)).toBe("registered");
    const [row] = await sql<{ version_seq: number }[]>`select version_seq from attachments where id = ${a.id}`;
    expect(row?.version_seq).toBe(3);
    expect(await svc.storageUsage(caller(org))).toEqual({ used_bytes: 5 });
  });

  it("when a file_key is registered again under another key, then 400 already registered; the same key replays", async () => {
    const org = await tenant();
    const t = await svc.startUpload(caller(org), "T-1", file(4), limits(MB, MB));
    await upload(t.file_key, Buffer.from("data"));
    const body = { ...file(4), file_key: t.file_key };
    const a = await svc.registerAttachment(caller(org, "reg-1"), "T-1", body);
    expect(await svc.registerAttachment(caller(org, "reg-1"), "T-1", body)).toEqual(a);
    expect(await refusal(svc.registerAttachment(caller(org, "reg-2"), "T-1", body))).toMatchObject({
      pointer: "/file_key",
      detail: "/file_key is already registered",
    });
    expect(await svc.storageUsage(caller(org))).toEqual({ used_bytes: 4 });
  });

  it("when the file_key is another organization's, unknown, or the declared size differs, then 400 naming the field", async () => {
    const org = await tenant();
    const other = await tenant();
    const t = await svc.startUpload(caller(other), "T-1", file(4), limits(MB, MB));
    await upload(t.file_key, Buffer.from("data"));
    expect(await refusal(svc.registerAttachment(caller(org), "T-1", { ...file(4), file_key: t.file_key }))).toMatchObject({ pointer: "/file_key" });
    expect(await refusal(svc.registerAttachment(caller(org), "T-1", { ...file(4), file_key: "att/x/upl_nope" }))).toMatchObject({ pointer: "/file_key" });
    expect(await refusal(svc.registerAttachment(caller(other), "T-1", { ...file(5), file_key: t.file_key }))).toMatchObject({ pointer: "/size" });
    expect(await refusal(svc.registerAttachment(caller(other), "T-2", { ...file(4), file_key: t.file_key }))).toMatchObject({ code: "resource_not_found" });
  });
});

describe("list, download, delete", () => {
  it("when attachments are listed, then newest first in keyset pages; another organization sees 404", async () => {
    const org = await tenant();
    const a = await attached(org, 3, "a.pdf");
    const b = await attached(org, 4, "b.pdf");
    const p1 = await svc.listAttachments(caller(org), "T-1", 1, undefined);
    expect(p1.data).toEqual([b]);
    expect(p1.has_more).toBe(true);
    const p2 = await svc.listAttachments(caller(org), "T-1", 1, p1.next_cursor ?? undefined);
    expect(p2).toEqual({ data: [a], has_more: false, next_cursor: null });
    expect((await refusal(svc.listAttachments(caller(await tenant()), "T-2", 10, undefined))).code).toBe("resource_not_found");
  });

  it("when a download link is asked, then a capability that opens the attachment; tampered or expired is link_invalid", async () => {
    const org = await tenant();
    const a = await attached(org, 6, "plan.pdf");
    const link = await svc.downloadAttachment(caller(org), "T-1", a.id);
    expect(Date.parse(link.expires_at) - Date.now()).toBeGreaterThan(4 * 60_000);
    const cap = capabilityOf(link);
    expect(await svc.openDownload(cap)).toEqual({ file_key: expect.stringMatching(/^att\//), file_name: "plan.pdf", content_type: "application/pdf", size: 6 });
    expect((await refusal(svc.openDownload(`${cap}x`))).code).toBe("link_invalid");
    const [, payload] = cap.split(".");
    const p = JSON.parse(Buffer.from(payload ?? "", "base64url").toString("utf8")) as Record<string, unknown>;
    expect(
      (
        await refusal(
          svc.openDownload(
            caps.mint({ kind: "download", organization_id: org, file_key: String(p["file_key"]), attachment_id: a.id, expires_at: Date.now() - 1 }),
          ),
        )
      ).code,
    ).toBe("link_invalid");
    // An upload capability does not download.
    expect(
      (await refusal(svc.openDownload(caps.mint({ kind: "upload", organization_id: org, file_key: String(p["file_key"]), expires_at: Date.now() + 60_000 }))))
        .code,
    ).toBe("link_invalid");
    expect((await refusal(svc.downloadAttachment(caller(await tenant()), "T-1", a.id))).code).toBe("resource_not_found");
  });

  it("when an attachment is deleted, then it is gone from the list, its bytes and object are freed, and its link answers 404", async () => {
    const org = await tenant();
    const a = await attached(org, 7);
    const cap = capabilityOf(await svc.downloadAttachment(caller(org), "T-1", a.id));
    const { file_key } = await svc.openDownload(cap);
    expect((await refusal(svc.deleteAttachment(caller(await tenant()), "T-1", a.id))).code).toBe("resource_not_found");
    expect(await svc.storageUsage(caller(org))).toEqual({ used_bytes: 7 });
    expect(await svc.deleteAttachment(caller(org), "T-1", a.id)).toEqual({ id: a.id, deleted: true });
    expect((await svc.listAttachments(caller(org), "T-1", 10, undefined)).data).toEqual([]);
    expect(await svc.storageUsage(caller(org))).toEqual({ used_bytes: 0 });
    expect(await store.stat(file_key)).toBeNull();
    expect((await refusal(svc.openDownload(cap))).code).toBe("resource_not_found");
    expect((await refusal(svc.deleteAttachment(caller(org), "T-1", a.id))).code).toBe("resource_not_found");
  });
});

describe("sweep", () => {
  it("when a ticket expired unregistered, then the sweep deletes it and its object; live tickets and attachments keep theirs", async () => {
    const org = await tenant();
    const expired = await svc.startUpload(caller(org), "T-1", file(3), limits(MB, MB));
    await upload(expired.file_key, Buffer.from("old"));
    const live = await svc.startUpload(caller(org), "T-1", file(3), limits(MB, MB));
    await upload(live.file_key, Buffer.from("new"));
    const kept = await attached(org, 2);
    await sql`update uploads set expires_at = now() - interval '1 second' where file_key = ${expired.file_key}`;
    // A lifetime of 0: every object is old enough to be an orphan, so only the rows protect them.
    const r = await service(0).sweep();
    expect(r.ran).toBe(true);
    expect(r.expired).toBeGreaterThanOrEqual(1);
    expect(await ticketState(expired.file_key)).toBeNull();
    expect(await store.stat(expired.file_key)).toBeNull();
    expect(await store.stat(live.file_key)).not.toBeNull();
    const { file_key } = await svc.openDownload(capabilityOf(await svc.downloadAttachment(caller(org), "T-1", kept.id)));
    expect(await store.stat(file_key)).not.toBeNull();
  });

  it("when an object under att/ has no attachment and no ticket, then it is deleted once older than a ticket's life", async () => {
    const org = await tenant();
    const key = `att/${org}/${newId("upl")}`;
    await upload(key, Buffer.from("orphan"));
    await svc.sweep(); // 15-minute lifetime: the object is too young
    expect(await store.stat(key)).not.toBeNull();
    const r = await service(0).sweep();
    expect(r.orphans).toBeGreaterThanOrEqual(1);
    expect(await store.stat(key)).toBeNull();
  });

  it("when another replica holds the sweep, then this one skips and deletes nothing", async () => {
    const org = await tenant();
    const key = `att/${org}/${newId("upl")}`;
    await upload(key, Buffer.from("orphan"));
    const r = await db.tx(async (t) => {
      expect(await attachmentsRepo(t).trySweepLock()).toBe(true);
      return service(0).sweep();
    });
    expect(r).toEqual({ ran: false, expired: 0, orphans: 0 });
    expect(await store.stat(key)).not.toBeNull();
  });
});
