import type { BlobStore } from "@tasksvc/blobs";
import { type ImportJob, MAX_IMPORT_ERRORS, systemContext } from "@tasksvc/contracts";
import type { Cleanable, ImportRow } from "../../repo/imports-repo.js";
import type { TasksResources } from "../resources.js";
import { csvReader } from "./csv.js";
import { jsonlReader } from "./jsonl.js";
import { type RawRecord, splitRecords } from "./records.js";
import { type ChunkWork, FileRefused, type FormatReader, type ImportRun, type MemberLookup, type Problem, problem, Tally } from "./tally.js";

/** Lines a transaction takes (the create statement's rows), and the bytes a chunk may hold, lines of up to `maxLineBytes` each. */
export const CHUNK_LINES = 250;
const CHUNK_BYTES = 4 * 1024 * 1024;

export interface RunnerOptions {
  store: BlobStore;
  maxLineBytes: number;
  members: MemberLookup;
  /** How long an upload ticket lasts: the file of a dry run stays for a real import that long. */
  ticketTtlMs: number;
}

/** Another worker moved the import meanwhile (its message came again while this one ran). */
export class Superseded extends Error {
  constructor() {
    super("another worker moved this import meanwhile");
    this.name = "Superseded";
  }
}

/** The process is stopping: the job goes back to the queue, to go on from the last chunk recorded. */
export class Stopping extends Error {
  constructor() {
    super("stopping");
    this.name = "Stopping";
  }
}

const finished = (row: Pick<ImportRow, "status">) => row.status === "succeeded" || row.status === "failed";

/**
 * Reads the file from the start, skips the lines its row records as done, and commits the rest a
 * chunk at a time: each chunk's tasks, links and counts, with the line it reached, in one
 * transaction under the import's row lock. A worker killed at any point leaves every line either
 * recorded with its work or not at all, so the next one creates nothing twice.
 */
export function importRunner(res: TasksResources, o: RunnerOptions) {
  const repo = res.repos.imports;

  async function fail(id: string, p: Problem & { line: number }): Promise<void> {
    await repo.finish(id, "failed", [p]);
  }

  /** The bookkeeping goes once the import has finished, and the file unless a real import may follow a dry run; a crash in between leaves it to the sweep. */
  async function cleanup(row: Cleanable): Promise<void> {
    if (!row.dry_run) await o.store.delete(row.file_key);
    while (!(await repo.cleanSome(row, 5000, o.ticketTtlMs))) {
      // Each slice is its own statement, well under the statement time limit.
    }
  }

  async function run(job: ImportJob, working: () => void, stopping: () => boolean): Promise<void> {
    const row = await repo.get(job.organization_id, job.import_id);
    if (!row) return;
    if (finished(row)) return cleanup(row);
    const run: ImportRun = {
      id: row.id,
      org: row.organization_id,
      userId: row.user_id,
      dryRun: row.dry_run,
      stamp: { actor: row.actor, requestId: row.request_id, batchKey: null },
      ctx: { ...systemContext(`import_${row.id}`), organization_id: row.organization_id },
    };
    const opened = await o.store.get(row.file_key);
    if (!opened) {
      await fail(row.id, { line: 1, ...problem("", "file_unreadable", "the uploaded file is gone from the store") });
      return cleanup(row);
    }
    const csv = row.format === "csv" ? csvReader(run, { members: o.members, now: res.now }) : undefined;
    const jsonl = csv ? undefined : jsonlReader({ run, repos: res.repos, members: o.members, now: res.now });
    const reader: FormatReader = csv ?? (jsonl as FormatReader);
    let mark = Number(row.lines_done);
    let notes: Problem[] = [];
    let buffer: RawRecord[] = [];
    let bufferBytes = 0;
    let kind: string | null = null;
    let last: RawRecord | undefined;

    /** The chunk being committed, if any: chunks commit one after another, each from the line the one before reached. */
    let committing: Promise<void> | undefined;
    /** The last line handed to a commit. */
    let handedOn = mark;

    const commit = async (upTo: RawRecord, work: ChunkWork, said: Problem[]) => {
      const tally = await res.tx(async (r) => {
        const at = await r.imports.lockMark(run.id);
        if (!at || finished(at) || at.lines_done !== mark) throw new Superseded();
        const t = new Tally();
        for (const n of said) t.note(1, n);
        await work.write(r, t);
        t.errors.sort((a, b) => a.line - b.line);
        const room = Math.max(0, MAX_IMPORT_ERRORS - at.errors_kept);
        await r.imports.advance(run.id, {
          linesDone: upTo.line,
          bytesDone: upTo.end,
          created: t.created,
          failed: t.failed,
          errors: t.errors.slice(0, room),
        });
        return t;
      });
      mark = upTo.line;
      res.written();
      if (tally.touched.length > 0) {
        res.cache.invalidate(run.org, tally.touched);
        await res.changed(run.org, tally.touched);
      }
      working();
      if (stopping()) throw new Stopping();
    };

    const flush = async () => {
      const upTo = last;
      if (upTo === undefined || upTo.line <= handedOn) return;
      const records = buffer;
      buffer = [];
      bufferBytes = 0;
      kind = null;
      const said = notes;
      notes = [];
      const work = await reader.prepare(records);
      if (committing) await committing;
      committing = commit(upTo, work, said);
      handedOn = upTo.line;
      // Awaited by the next flush or at the end; a failure meanwhile is not unhandled.
      committing.catch(() => undefined);
      if (!reader.preparesAhead) await committing;
    };
    try {
      for await (const rec of splitRecords(opened.body, row.format, o.maxLineBytes)) {
        if (csv && rec.line === 1) {
          // Read on every run (the columns), said once.
          const said = csv.header(rec);
          if (rec.line > mark) notes = said;
          last = rec;
          continue;
        }
        if (rec.line <= mark) continue;
        const k = jsonl?.kindOf(rec) ?? null;
        if (buffer.length >= CHUNK_LINES || bufferBytes >= CHUNK_BYTES || (k !== null && kind !== null && k !== kind)) await flush();
        if (k !== null) kind = k;
        buffer.push(rec);
        bufferBytes += rec.bytes?.length ?? 0;
        last = rec;
      }
      await flush();
      await committing;
      await repo.finish(run.id, "succeeded");
    } catch (e) {
      // A chunk still committing ends first: its line mark decides where the next run starts.
      await committing?.catch(() => undefined);
      if (!(e instanceof FileRefused)) throw e;
      await fail(run.id, e.problem);
    } finally {
      opened.body.destroy();
    }
    await cleanup(row);
  }

  return {
    run,
    cleanup,
    async giveUp(job: ImportJob, attempts: number): Promise<void> {
      const row = await repo.get(job.organization_id, job.import_id);
      if (!row || finished(row)) return;
      const line = Number(row.lines_done) + 1;
      await fail(row.id, {
        line,
        ...problem("", "stopped", `the import stopped at this line after ${attempts} failed attempts; the lines before it are imported`),
      });
      await cleanup(row);
    },
    /** Unfinished imports nobody moved for two minutes (a job lost before its publish) are queued again; finished ones are cleaned. */
    async sweep(queue: (job: ImportJob) => Promise<void>): Promise<number> {
      const stalled = await repo.stalled(2 * 60_000, 100);
      for (const s of stalled) await queue({ organization_id: s.organization_id, import_id: s.id });
      for (const u of await repo.uncleaned(20)) await cleanup(u);
      return stalled.length;
    },
  };
}
export type ImportRunner = ReturnType<typeof importRunner>;
