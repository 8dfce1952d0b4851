import type { ImportErrorCode, ImportLineError, RpcContext } from "@tasksvc/contracts";
import { isAppError, zodFieldErrors } from "@tasksvc/errors";
import type { z } from "zod";
import type { Repositories } from "../../repo/repositories.js";
import type { VersionStamp } from "../../repo/version-stamp.js";
import type { RawRecord } from "./records.js";

/** The import a chunk belongs to, as its worker knows it. */
export interface ImportRun {
  id: string;
  org: string;
  /** The importing user: the actor of every write, and the owner or author where the file's person is not a member here. */
  userId: string;
  dryRun: boolean;
  /** What the versions it writes record: the credential that started it and that request. */
  stamp: VersionStamp;
  /** For the keys service, asked as the system about this organization. */
  ctx: RpcContext;
}

export type Problem = Omit<ImportLineError, "line">;

/** A line's own problems: a handful is enough to fix it. */
const MAX_PER_LINE = 5;
/** A pointer or detail quotes the file (a key, a parser's message): kept short, so a hundred errors stay small. */
const MAX_POINTER = 200;
const MAX_DETAIL = 500;
const cut = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);
const bounded = (line: number, p: Problem): ImportLineError => ({
  line,
  pointer: cut(p.pointer, MAX_POINTER),
  code: p.code,
  detail: cut(p.detail, MAX_DETAIL),
});

/** What a chunk's lines came to; built anew each time its transaction runs (a deadlock runs it again). */
export class Tally {
  readonly errors: ImportLineError[] = [];
  created = 0;
  failed = 0;
  /** Tasks written after their creation (archived, linked), whose cached copies must go. */
  readonly touched: number[] = [];

  fail(line: number, problems: readonly Problem[]): void {
    this.failed++;
    for (const p of problems.slice(0, MAX_PER_LINE)) this.errors.push(bounded(line, p));
  }

  /** Said about a line that does not fail. */
  note(line: number, p: Problem): void {
    this.errors.push(bounded(line, p));
  }
}

/** Emails to member ids (keyed lower-cased), as the keys service knows them now. */
export type MemberLookup = (run: ImportRun, emails: readonly string[]) => Promise<Map<string, string>>;

/** A line of a JSONL file that parsed as an object with a known `object`. */
export interface Line {
  line: number;
  obj: Record<string, unknown>;
}

export interface JsonlDeps {
  run: ImportRun;
  /** The pool (outside the chunk's transaction): what earlier chunks committed. */
  repos: Repositories;
  members: MemberLookup;
  now: () => Date;
}

/** One kind of JSONL line: checked and looked up outside the transaction, written inside it. */
export interface LineHandler {
  prepare(lines: readonly Line[]): Promise<ChunkWork>;
}

/** A chunk's lines, checked outside any transaction; `write` runs inside the chunk's. */
export interface ChunkWork {
  write(r: Repositories, tally: Tally): Promise<void>;
}

export interface FormatReader {
  /** May ask other services; never holds a lock. */
  prepare(records: readonly RawRecord[]): Promise<ChunkWork>;
  /**
   * True when prepare() reads nothing an earlier chunk writes: the next chunk is then prepared
   * while the current one commits.
   */
  readonly preparesAhead: boolean;
}

/** The whole file cannot be imported: the import fails with this. */
export class FileRefused extends Error {
  constructor(readonly problem: ImportLineError) {
    super(problem.detail);
    this.name = "FileRefused";
  }
}

export const problem = (pointer: string, code: ImportErrorCode, detail: string): Problem => ({ pointer, code, detail });

/** A zod refusal as the line's problems, each pointer under `prefix`, as the route would name them. */
export function zodProblems(error: z.ZodError, prefix = ""): Problem[] {
  return zodFieldErrors(error, prefix).map((f) => problem(f.pointer, "validation_failed", f.message));
}

/** An AppError of the create route's checks (a field error) as the line's problems; anything else is not the line's fault. */
export function appProblems(e: unknown): Problem[] {
  if (!isAppError(e) || e.status !== 400) throw e;
  const fields = e.errors ?? [];
  return fields.length > 0 ? fields.map((f) => problem(f.pointer, "validation_failed", f.message)) : [problem("", "validation_failed", e.detail)];
}
