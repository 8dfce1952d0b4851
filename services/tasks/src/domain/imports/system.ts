import type { BlobStore } from "@tasksvc/blobs";
import {
  type Caller,
  type CreateImportBody,
  type Import,
  IMPORT_CONTENT_TYPES,
  type ImportContentType,
  type ImportJob,
  importMediaType,
  type Page,
  type StartImportUploadBody,
  type UploadTarget,
} from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { toImport } from "../../repo/imports-repo.js";
import type { Repositories } from "../../repo/repositories.js";
import type { Capabilities } from "../attachments/capabilities.js";
import { notFound } from "../refs.js";
import type { TasksResources } from "../resources.js";
import type { MemberLookup } from "./tally.js";
import { importRunner, Stopping, Superseded } from "./runner.js";

/** Deliveries of a job whose run fails (about half an hour with the queue's backoff). */
const MAX_ATTEMPTS = 30;

/** The sweep of attachments lists only its own prefix; an import's file goes when its import is done. */
export const IMPORT_PREFIX = "imp/";

export interface ImportsOptions {
  store: BlobStore;
  caps: Capabilities;
  uploadTtlMs: number;
  /** The largest import file, in bytes. */
  maxBytes: number;
  /** The longest line (or CSV row) read; a longer one is that line's error. */
  maxLineBytes: number;
  /** Imports queued or running at once per organization. */
  maxUnfinished: number;
  queue(job: ImportJob): Promise<void>;
  members: MemberLookup;
}

const TYPES = Object.keys(IMPORT_CONTENT_TYPES).join(", ");
const isImportType = (t: string): t is ImportContentType => Object.hasOwn(IMPORT_CONTENT_TYPES, t);

export function importsSystem(res: TasksResources, o: ImportsOptions) {
  const runner = importRunner(res, { store: o.store, maxLineBytes: o.maxLineBytes, members: o.members, ticketTtlMs: o.uploadTtlMs });
  let stopping = false;
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

  function keyed<T>(c: Caller, operation: string, work: (r: Repositories) => Promise<T>, afterCommit?: (result: T) => Promise<void>): Promise<T> {
    return idempotentWrite({
      records: res.repos.idempotency,
      tx: res.tx,
      credentialId: c.credentialId,
      organizationId: c.organizationId,
      key: c.idempotencyKey,
      operation,
      work,
      ...(afterCommit ? { afterCommit } : {}),
    });
  }

  const queue = (job: ImportJob) => o.queue(job).catch((err: unknown) => res.log.warn({ err, ...job }, "could not queue an import; the next sweep queues it"));

  return {
    startUpload(c: Caller, b: StartImportUploadBody): Promise<{ file_key: string; expires_at: string; target: UploadTarget }> {
      const media = importMediaType(b.content_type);
      if (!isImportType(media.type)) throw fieldError("/content_type", `must be one of ${TYPES}`);
      if (!media.utf8) throw fieldError("/content_type", "an import file is read as UTF-8: give charset=utf-8 or no charset");
      if (b.size > o.maxBytes) throw fieldError("/size", `exceeds the largest import file, ${o.maxBytes} bytes`);
      return keyed(c, "startImportUpload", async (r) => {
        const org = c.organizationId;
        const fileKey = `${IMPORT_PREFIX}${org}/${newId("upl")}`;
        const expires = await r.imports.insertUpload({ fileKey, org, fileName: b.file_name, contentType: b.content_type, size: b.size, ttlMs: o.uploadTtlMs });
        const url = await o.store.presignPut(fileKey, { size: b.size, contentType: b.content_type, expiresInSeconds: seconds(o.uploadTtlMs) });
        const target: UploadTarget =
          url === null
            ? { kind: "gateway", capability: o.caps.mint({ kind: "upload", organization_id: org, file_key: fileKey, expires_at: expires.getTime() }) }
            : { kind: "direct", url };
        return { file_key: fileKey, expires_at: expires.toISOString(), target };
      });
    },

    /** The ticket is locked, so two imports of one file take turns and the second is refused. */
    createImport(c: Caller, b: CreateImportBody): Promise<Import> {
      const org = c.organizationId;
      return keyed(
        c,
        "createImport",
        async (r) => {
          const ticket = await r.attachments.upload(b.file_key, true);
          if (!ticket || ticket.organization_id !== org || ticket.task_number !== null)
            throw fieldError("/file_key", "is not an import file uploaded in this organization (start one with POST /v1/imports/uploads)");
          if (ticket.state === "registered") throw fieldError("/file_key", "is being read by another import; wait for it to finish");
          if (!ticket.live) throw fieldError("/file_key", "the upload ticket expired; upload the file again");
          const media = importMediaType(ticket.content_type);
          const formats: readonly string[] = isImportType(media.type) ? IMPORT_CONTENT_TYPES[media.type] : [];
          if (!formats.includes(b.format)) throw fieldError("/format", `does not suit the file's content type, ${ticket.content_type}`);
          const stored = await o.store.stat(b.file_key);
          if (!stored || stored.size !== Number(ticket.size))
            throw fieldError("/file_key", `has no uploaded file of ${ticket.size} bytes yet; PUT its bytes to the upload link first`);
          if ((await r.imports.lockAndCountUnfinished(org)) >= o.maxUnfinished) {
            throw new AppError(
              "rate_limited",
              `An organization has at most ${o.maxUnfinished} imports queued or running; retry once one has finished (GET /v1/imports).`,
              { retryAfter: 30 },
            );
          }
          const row = await r.imports.insert({
            id: newId("imp"),
            org,
            user: c.userId,
            actor: c.actor,
            requestId: c.ctx.request_id,
            fileKey: b.file_key,
            format: b.format,
            dryRun: b.dry_run ?? false,
            bytes: Number(ticket.size),
          });
          return toImport(row);
        },
        (made) => queue({ organization_id: org, import_id: made.id }),
      );
    },

    async getImport(c: Caller, id: string): Promise<Import> {
      const row = await res.repos.imports.get(c.organizationId, id);
      if (!row) throw notFound("import");
      return toImport(row);
    },

    listImports: (c: Caller, limit: number, after: string | undefined): Promise<Page<Import>> => res.repos.imports.list(c.organizationId, limit, after),

    /**
     * The job's answer: "again" when it should come back later (another worker has it, or this
     * process stops). A failure is retried by the queue, until its `deliveries`-th: then the import
     * fails where it stands, so a chunk that can never be written does not hold its place for ever.
     */
    async run(job: ImportJob, working: () => void, deliveries: number): Promise<"done" | { again: number }> {
      try {
        await runner.run(job, working, () => stopping);
        return "done";
      } catch (e) {
        if (e instanceof Stopping) return { again: 0 };
        if (e instanceof Superseded) return { again: 30_000 };
        if (deliveries < MAX_ATTEMPTS) throw e;
        res.log.error({ err: e, ...job }, "an import failed on its last attempt; it is marked failed");
        await runner.giveUp(job, MAX_ATTEMPTS);
        return "done";
      }
    },

    sweep: () => runner.sweep(queue),

    /** Jobs in flight stop after their current chunk. */
    stop(): void {
      stopping = true;
    },
  };
}
export type ImportsSystem = ReturnType<typeof importsSystem>;
