import type { BlobStore } from "@tasksvc/blobs";
import {
  type Caller,
  type CreateExportBody,
  type ExportFormat,
  type ExportJob,
  type ExportView,
  exportParts,
  type OpenedDownload,
  type Page,
  type UploadTarget,
} from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, isAppError } from "@tasksvc/errors";
import type { z } from "zod";
import type { ExportRow } from "../../repo/exports-repo.js";
import { type Capabilities, linkInvalid } from "../attachments/capabilities.js";
import type { TasksResources } from "../resources.js";
import { concatenated, removeFiles } from "./files.js";
import { type WriterDeps, type Written, writeExport } from "./writer.js";

export interface ExportsOptions extends WriterDeps {
  store: BlobStore;
  caps: Capabilities;
  /** Puts the export's job on the work queue. */
  publish(job: ExportJob): Promise<void>;
  /** How long a file and its link last after the export succeeded. */
  ttlMs: number;
  /** Exports waiting or running per organization at once. */
  maxActive: number;
  /** A run that stops renewing its lease for this long is taken over. */
  leaseMs: number;
  /** Runs of one export before it fails for good. */
  maxRuns: number;
  /** Progress and lease are written at most this often. */
  heartbeatMs: number;
}

/** What the work queue is told: done, or again after a delay. */
export type ExportOutcome = "ack" | { nak: number };

/** The run stops: the process is stopping, or another run took the export over. */
class RunEnded extends Error {
  constructor(readonly why: "stopping" | "lease lost") {
    super(`the export's run ended: ${why}`);
  }
}

/** A message sent again while its waiting export is still not taken (a lost publish) is looked at this late. */
const REPUBLISH_AFTER_MS = 5 * 60_000;
/** Finished exports stay listed this long after their file expired. */
const RETENTION_MS = 30 * 24 * 3600_000;
/** Another export of the organization runs: looked at again after this. */
const BUSY_WAIT_MS = 15_000;

const CONTENT_TYPES: Record<ExportFormat, string> = { jsonl: "application/x-ndjson", csv: "text/csv; charset=utf-8" };
/** Derived from the export alone, so a run again writes over its predecessor's file rather than beside it. */
export const exportFileKey = (org: string, id: string, format: ExportFormat) => `exp/${org}/${id}.${format}`;
const fileNameOf = (r: Pick<ExportRow, "id" | "format">) => `export-${r.id}.${r.format}`;
const notFound = () => new AppError("resource_not_found", "No export with that id exists in this organization.");

export function exportsSystem(res: TasksResources, o: ExportsOptions) {
  const repo = res.repos.exports;

  async function view(r: ExportRow): Promise<ExportView> {
    const expires = r.expires_at?.getTime() ?? 0;
    let download: UploadTarget | null = null;
    if (r.status === "succeeded" && r.file_key !== null && expires > Date.now()) {
      const url = await o.store.presignGet(r.file_key, {
        expiresInSeconds: Math.max(1, Math.floor((expires - Date.now()) / 1000)),
        fileName: fileNameOf(r),
        contentType: CONTENT_TYPES[r.format],
      });
      download =
        url === null
          ? {
              kind: "gateway",
              capability: o.caps.mint({ kind: "export", organization_id: r.organization_id, file_key: r.file_key, export_id: r.id, expires_at: expires }),
            }
          : { kind: "direct", url };
    }
    return {
      id: r.id,
      status: r.status,
      format: r.format,
      include: r.include,
      progress: { done: Number(r.done), total: Number(r.total) },
      download,
      expires_at: r.expires_at?.toISOString() ?? null,
      error: r.error_code === null ? null : { code: r.error_code, detail: r.error_detail ?? "" },
      created_at: r.created_at.toISOString(),
      completed_at: r.completed_at?.toISOString() ?? null,
    };
  }

  async function get(org: string, id: string): Promise<ExportView> {
    const row = await repo.get(org, id);
    if (!row) throw notFound();
    return view(row);
  }

  /** One run of a claimed export, to its file in the store. */
  async function produce(row: ExportRow, working: () => void, stopping: AbortSignal): Promise<"succeeded" | "lease lost"> {
    const attempt = row.attempts;
    let progress = { done: 0, total: 0 };
    let ended: RunEnded | undefined;
    const record = () => {
      working();
      repo.renew(row.id, attempt, progress.done, progress.total, o.leaseMs).then(
        (held) => {
          if (!held) ended ??= new RunEnded("lease lost");
        },
        (err: unknown) => res.log.warn({ err, export_id: row.id }, "export progress not recorded"),
      );
    };
    // Also while the file is sent: the lease and the message's ack timer stay alive however long a step takes.
    const heartbeat = setInterval(record, o.heartbeatMs);
    // The first tasks written are recorded at once, so a poll sees the run under way before its first beat.
    let started = false;
    let written: Written | undefined;
    try {
      const tick = async (done: number, total: number) => {
        progress = { done, total };
        if (!started && done > 0 && done < total) {
          started = true;
          record();
        }
        if (stopping.aborted) ended ??= new RunEnded("stopping");
        if (ended) throw ended;
      };
      const began = performance.now();
      written = await writeExport(o, { org: row.organization_id, id: row.id, format: row.format, parts: new Set(row.include), tick });
      await tick(written.tasks, progress.total);
      const wrote = performance.now();
      const fileKey = exportFileKey(row.organization_id, row.id, row.format);
      await o.store.put(fileKey, concatenated(written.paths), { size: written.size, contentType: CONTENT_TYPES[row.format] });
      const ok = await repo.succeed(row.id, attempt, { fileKey, size: written.size, done: written.tasks, total: progress.total, ttlMs: o.ttlMs });
      res.log.info(
        { export_id: row.id, tasks: written.tasks, bytes: written.size, write_ms: Math.round(wrote - began), upload_ms: Math.round(performance.now() - wrote) },
        "export file stored",
      );
      // Lost meanwhile: the run that took over writes the same key and records it.
      return ok ? "succeeded" : "lease lost";
    } finally {
      clearInterval(heartbeat);
      if (written) await removeFiles(written.paths);
    }
  }

  async function runClaimed(job: ExportJob, working: () => void, stopping: AbortSignal): Promise<ExportOutcome> {
    const claimed = await res.tx((r) => r.exports.claim(job.organization_id, job.export_id, o.leaseMs));
    if (claimed === "busy") return { nak: BUSY_WAIT_MS };
    // Held by a live run (its message comes back if it dies), or over (the next look acknowledges it).
    if (claimed === undefined) return { nak: o.leaseMs };
    const attempt = claimed.attempts;
    if (attempt > o.maxRuns) {
      await repo.fail(claimed.id, attempt, "internal_error", `The export did not complete in ${o.maxRuns} runs; ask for a new one.`);
      return "ack";
    }
    try {
      await produce(claimed, working, stopping);
      return "ack";
    } catch (e) {
      if (e instanceof RunEnded && e.why === "lease lost") return "ack";
      if (e instanceof RunEnded) {
        await repo.release(claimed.id, attempt);
        return { nak: 0 };
      }
      if (attempt < o.maxRuns) {
        res.log.warn({ err: e, export_id: claimed.id, attempt }, "export run failed; it runs again");
        await repo.release(claimed.id, attempt);
        return { nak: Math.min(1000 * 2 ** attempt, 60_000) };
      }
      res.log.error({ err: e, export_id: claimed.id, attempt }, "export failed");
      const code = isAppError(e) ? e.code : "internal_error";
      await repo.fail(
        claimed.id,
        attempt,
        code,
        `The export failed ${attempt} times (the last: ${isAppError(e) ? e.message : "an internal error"}); ask for a new one.`,
      );
      await o.store.delete(exportFileKey(claimed.organization_id, claimed.id, claimed.format)).catch(() => undefined);
      return "ack";
    }
  }

  return {
    async create(c: Caller, b: CreateExportBody): Promise<ExportView> {
      const org = c.organizationId;
      // The key records the id only, so a request sent again answers the export as it stands now.
      const made = await idempotentWrite({
        records: res.repos.idempotency,
        tx: res.tx,
        credentialId: c.credentialId,
        organizationId: c.organizationId,
        key: c.idempotencyKey,
        operation: "createExport",
        async work(r) {
          const active = await r.exports.active(org);
          if (active >= o.maxActive)
            throw new AppError(
              "limit_reached",
              `This organization already has ${active} exports waiting or running, the most it may; ask again once one has finished.`,
            );
          const include = exportParts(b);
          const row = await r.exports.insert({ id: newId("exp"), org, user: c.userId, format: b.format, include });
          // An export carries the organization's data out: who asked for it, and for what, is on the record.
          await r.audit.write({
            organizationId: org,
            action: "export.created",
            actor: c.actor,
            ctx: c.ctx,
            target: { type: "export", id: row.id },
            changes: { format: { from: null, to: b.format }, include: { from: null, to: include } },
          });
          return { id: row.id };
        },
      });
      // Lost (a crash, NATS away), the job is published again by the sweep.
      await o
        .publish({ organization_id: org, export_id: made.id })
        .catch((err: unknown) => res.log.warn({ err, export_id: made.id }, "export job not published"));
      return get(org, made.id);
    },

    get: (c: Caller, id: string) => get(c.organizationId, id),

    async list(c: Caller, limit: number, after: string | undefined): Promise<Page<ExportView>> {
      const page = await repo.list(c.organizationId, limit, after);
      return { ...page, data: await Promise.all(page.data.map(view)) };
    },

    async openDownload(capability: string): Promise<z.output<typeof OpenedDownload>> {
      const cap = o.caps.verify(capability, "export");
      const row = await repo.get(cap.organization_id, cap.export_id);
      if (row?.status !== "succeeded" || row.file_key !== cap.file_key || row.file_size === null) throw notFound();
      // Shortened by an operator, or about to be swept: the row's expiry is the one that counts.
      if ((row.expires_at?.getTime() ?? 0) <= Date.now()) throw linkInvalid();
      return { file_key: row.file_key, file_name: fileNameOf(row), content_type: CONTENT_TYPES[row.format], size: Number(row.file_size) };
    },

    /**
     * One delivery of an export's message: nothing when it is over, later when another run holds it
     * or another export of its organization runs, else a run, within the organization's share of
     * the connections for scans (a refusal there: later).
     */
    async run(job: ExportJob, working: () => void, stopping: AbortSignal): Promise<ExportOutcome> {
      const row = await repo.get(job.organization_id, job.export_id);
      if (!row || row.status === "succeeded" || row.status === "failed") return "ack";
      if (row.status === "running" && !row.lapsed) return { nak: o.leaseMs };
      try {
        return await res.scans.run(job.organization_id, undefined, { operation: "export", narrow: "export less at once" }, () =>
          runClaimed(job, working, stopping),
        );
      } catch (e) {
        if (isAppError(e) && e.code === "rate_limited") return { nak: 5000 };
        throw e;
      }
    },

    /** Jobs whose message was lost are queued again; expired files leave the store; finished exports are forgotten after a while. */
    async sweep(): Promise<{ republished: number; expired: number; forgotten: number }> {
      const stale = await repo.republish(REPUBLISH_AFTER_MS, 100);
      for (const s of stale) await o.publish({ organization_id: s.organization_id, export_id: s.id });
      const expired = await repo.expiredFiles(100);
      for (const f of expired) {
        await o.store.delete(f.file_key);
        await repo.forgetFile(f.id, f.file_key);
      }
      const forgotten = await repo.deleteFinished(RETENTION_MS, 1000);
      return { republished: stale.length, expired: expired.length, forgotten };
    },
  };
}
export type ExportsSystem = ReturnType<typeof exportsSystem>;
