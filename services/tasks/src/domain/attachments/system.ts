import { taskNumber, type Attachment, type Caller, type Page, type RegisterAttachmentBody, type StartUploadBody, type UploadTarget } from "@tasksvc/contracts";
import type { BlobStore } from "@tasksvc/blobs";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { type AttachmentsRepo, toAttachment } from "../../repo/attachments-repo.js";
import type { TasksResources } from "../resources.js";
import { linkInvalid, type Capabilities } from "./capabilities.js";

export interface AttachmentsOptions {
  store: BlobStore;
  caps: Capabilities;
  /** Also the age past which an unclaimed object is an orphan. */
  uploadTtlMs: number;
  downloadTtlMs: number;
}

/** The sweep lists only under it. */
export const ATTACHMENT_PREFIX = "att/";

const noTask = () => new AppError("resource_not_found", "No task with that id exists in this organization.");
const noAttachment = () => new AppError("resource_not_found", "No attachment with that id exists on this task.");

export interface UploadStarted {
  file_key: string;
  expires_at: string;
  target: UploadTarget;
}

export function attachmentsSystem(res: TasksResources, o: AttachmentsOptions) {
  const { store, caps } = o;
  const repo = res.repos.attachments;
  const tx = <T>(fn: (r: AttachmentsRepo) => Promise<T>) => res.tx((r) => fn(r.attachments));
  /** A later sweep repairs it: logged, not answered. */
  const warn = (err: unknown, what: string) => res.log.warn({ err }, `${what} failed`);
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

  async function taskOf(r: AttachmentsRepo, org: string, ref: string): Promise<{ number: number; version: number }> {
    const number = taskNumber(ref);
    const version = number === null ? undefined : await r.taskVersion(org, number);
    if (number === null || version === undefined) throw noTask();
    return { number, version };
  }

  function keyed<T>(c: Caller, operation: string, work: (r: AttachmentsRepo) => Promise<T>): Promise<T> {
    return idempotentWrite({
      records: res.repos.idempotency,
      tx: res.tx,
      credentialId: c.credentialId,
      organizationId: c.organizationId,
      key: c.idempotencyKey,
      operation,
      work: (r) => work(r.attachments),
    });
  }

  return {
    /** The ticket is the reservation, recorded under the organization's storage lock: two starts cannot both take the last bytes. */
    startUpload(c: Caller, ref: string, b: StartUploadBody, limits: { max_file_size: number; storage: number }): Promise<UploadStarted> {
      return keyed(c, "startUpload", async (r) => {
        const org = c.organizationId;
        const task = await taskOf(r, org, ref);
        if (b.size > limits.max_file_size) throw fieldError("/size", `exceeds the plan's largest file, ${limits.max_file_size} bytes`);
        const { used, reserved } = await r.lockStorage(org);
        if (used + reserved + b.size > limits.storage) {
          throw fieldError("/size", `the organization's storage allowance of ${limits.storage} bytes would be exceeded (${used + reserved} used or reserved)`);
        }
        const fileKey = `${ATTACHMENT_PREFIX}${org}/${newId("upl")}`;
        const expires = await r.insertUpload({
          fileKey,
          org,
          task: task.number,
          fileName: b.file_name,
          contentType: b.content_type,
          size: b.size,
          ttlMs: o.uploadTtlMs,
        });
        const url = await store.presignPut(fileKey, { size: b.size, contentType: b.content_type, expiresInSeconds: seconds(o.uploadTtlMs) });
        const target: UploadTarget =
          url === null
            ? { kind: "gateway", capability: caps.mint({ kind: "upload", organization_id: org, file_key: fileKey, expires_at: expires.getTime() }) }
            : { kind: "direct", url };
        return { file_key: fileKey, expires_at: expires.toISOString(), target };
      });
    },

    async claimUpload(capability: string): Promise<{ file_key: string; size: number; content_type: string }> {
      const cap = caps.verify(capability, "upload");
      const row = await repo.claimUpload(cap.organization_id, cap.file_key);
      if (row) return { file_key: row.file_key, size: Number(row.size), content_type: row.content_type };
      const seen = await repo.upload(cap.file_key);
      if (seen && seen.organization_id === cap.organization_id && seen.live && seen.state !== "open") {
        throw new AppError(
          "upload_already_received",
          "This upload link already received its bytes (or is receiving them); start a new upload for another file.",
        );
      }
      throw linkInvalid();
    },

    async completeUpload(fileKey: string, org: string | null): Promise<{ completed: boolean }> {
      return { completed: await repo.completeUpload(fileKey, org) };
    },

    async releaseUpload(fileKey: string, org: string | null): Promise<{ released: boolean }> {
      return { released: await repo.releaseUpload(fileKey, org) };
    },

    /** The ticket is locked, so a twin registration or the sweep waits; the bytes move from reservation to use in the same transaction. */
    registerAttachment(c: Caller, ref: string, b: RegisterAttachmentBody): Promise<Attachment> {
      return keyed(c, "registerAttachment", async (r) => {
        const org = c.organizationId;
        const task = await taskOf(r, org, ref);
        const ticket = await r.upload(b.file_key, true);
        if (!ticket || ticket.organization_id !== org) throw fieldError("/file_key", "is not an upload started in this organization");
        if (Number(ticket.task_number) !== task.number) throw fieldError("/file_key", "was started for another task");
        if (ticket.state === "registered") throw fieldError("/file_key", "is already registered");
        if (!ticket.live) throw fieldError("/file_key", "the upload ticket expired; start a new upload");
        if (b.size !== Number(ticket.size)) throw fieldError("/size", `differs from the size declared at upload-start, ${ticket.size} bytes`);
        if (b.content_type !== ticket.content_type)
          throw fieldError("/content_type", `differs from the content type declared at upload-start, ${ticket.content_type}`);
        const stored = await store.stat(b.file_key);
        if (!stored || stored.size !== b.size)
          throw fieldError("/file_key", `no uploaded object of that size (${b.size} bytes) under this key; upload the bytes first`);
        const row = await r.insertAttachment({
          id: newId("att"),
          org,
          task: task.number,
          versionSeq: task.version,
          fileKey: b.file_key,
          fileName: b.file_name,
          contentType: b.content_type,
          size: b.size,
        });
        return toAttachment(row);
      });
    },

    async listAttachments(c: Caller, ref: string, limit: number, after: string | undefined): Promise<Page<Attachment>> {
      const task = await taskOf(repo, c.organizationId, ref);
      return repo.listAttachments(c.organizationId, task.number, limit, after);
    },

    async downloadAttachment(c: Caller, ref: string, id: string): Promise<{ expires_at: string; target: UploadTarget }> {
      const org = c.organizationId;
      const task = await taskOf(repo, org, ref);
      const a = await repo.attachment(org, task.number, id);
      if (!a) throw noAttachment();
      const expires = Date.now() + o.downloadTtlMs;
      const url = await store.presignGet(a.file_key, { expiresInSeconds: seconds(o.downloadTtlMs), fileName: a.file_name, contentType: a.content_type });
      const target: UploadTarget =
        url === null
          ? {
              kind: "gateway",
              capability: caps.mint({ kind: "download", organization_id: org, file_key: a.file_key, attachment_id: a.id, expires_at: expires }),
            }
          : { kind: "direct", url };
      return { expires_at: new Date(expires).toISOString(), target };
    },

    async openDownload(capability: string): Promise<{ file_key: string; file_name: string; content_type: string; size: number }> {
      const cap = caps.verify(capability, "download");
      const a = await repo.attachmentByKey(cap.organization_id, cap.attachment_id, cap.file_key);
      if (!a) throw noAttachment();
      return { file_key: a.file_key, file_name: a.file_name, content_type: a.content_type, size: Number(a.size) };
    },

    /** The row first (its bytes stop counting at commit): when the store delete fails, the sweep's orphan pass removes the object. */
    async deleteAttachment(c: Caller, ref: string, id: string): Promise<{ id: string; deleted: true }> {
      const org = c.organizationId;
      const row = await tx(async (r) => {
        const task = await taskOf(r, org, ref);
        return r.deleteAttachment(org, task.number, id);
      });
      if (!row) throw noAttachment();
      await store.delete(row.file_key).catch((e: unknown) => warn(e, "attachment object delete (the sweep retries)"));
      return { id, deleted: true as const };
    },

    storageUsage: async (c: Caller): Promise<{ used_bytes: number }> => ({ used_bytes: await repo.usedBytes(c.organizationId) }),

    /**
     * One replica at a time (advisory lock). Object deletes happen before the commit: a failed commit
     * leaves rows whose objects are gone, which the next pass deletes again (an absent object is no error).
     */
    async sweep(batch = 500): Promise<{ ran: boolean; expired: number; orphans: number }> {
      return tx(async (r) => {
        if (!(await r.trySweepLock())) return { ran: false, expired: 0, orphans: 0 };
        const expired = await r.deleteExpiredUploads(batch);
        for (const key of expired) await store.delete(key);
        const cutoff = Date.now() - o.uploadTtlMs;
        let orphans = 0;
        let pending: string[] = [];
        const flush = async () => {
          const known = await r.knownKeys(pending);
          for (const key of pending) {
            if (known.has(key)) continue;
            await store.delete(key);
            orphans += 1;
          }
          pending = [];
        };
        for await (const o of store.list(ATTACHMENT_PREFIX)) {
          if (o.info.createdAt.getTime() > cutoff) continue;
          pending.push(o.key);
          if (pending.length >= batch) await flush();
        }
        await flush();
        return { ran: true, expired: expired.length, orphans };
      });
    },
  };
}
export type AttachmentsSystem = ReturnType<typeof attachmentsSystem>;
