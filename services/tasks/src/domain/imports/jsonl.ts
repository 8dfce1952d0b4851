import { catalogHandlers } from "./jsonl-catalog.js";
import { linkHandlers } from "./jsonl-links.js";
import { taskHandler } from "./jsonl-tasks.js";
import type { RawRecord } from "./records.js";
import { type ChunkWork, type FormatReader, type JsonlDeps, type Line, type LineHandler, problem, type Problem } from "./tally.js";

/** In the order the format promises, so that a line meets what it refers to before it. */
export const JSONL_OBJECTS = ["member", "custom_field", "label", "project", "task", "task_version", "dependency", "comment"] as const;
export type JsonlObject = (typeof JSONL_OBJECTS)[number];
const isObjectKind = (v: unknown): v is JsonlObject => typeof v === "string" && (JSONL_OBJECTS as readonly string[]).includes(v);

type Parsed = { kind: JsonlObject; obj: Record<string, unknown> } | { problem: Problem };

function parseLine(rec: RawRecord): Parsed | null {
  if (rec.bytes === null) return { problem: problem("", "line_too_long", "the line is longer than the largest line an import takes") };
  if (rec.bytes.length === 0) return null;
  let value: unknown;
  try {
    value = JSON.parse(rec.bytes.toString("utf8"));
  } catch (e) {
    return { problem: problem("", "invalid_json", `is not JSON: ${e instanceof Error ? e.message : String(e)}`) };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { problem: problem("", "invalid_json", "is not a JSON object") };
  const obj = value as Record<string, unknown>;
  if (!isObjectKind(obj["object"])) return { problem: problem("/object", "unknown_object", `must be one of ${JSONL_OBJECTS.join(", ")}`) };
  return { kind: obj["object"], obj };
}

/**
 * This API's own export, one object a line. Lines of one kind are read in chunks; the worker
 * commits a chunk before it reads a line of the next kind, so what a line refers to (made by an
 * earlier kind) is in the database when it is looked up.
 */
export function jsonlReader(deps: JsonlDeps) {
  const parsed = new WeakMap<RawRecord, Parsed | null>();
  const parsedOf = (rec: RawRecord): Parsed | null => {
    if (!parsed.has(rec)) parsed.set(rec, parseLine(rec));
    return parsed.get(rec) ?? null;
  };
  const noop: LineHandler = { prepare: async () => ({ write: async () => undefined }) };
  const handlers: Record<JsonlObject, LineHandler> = {
    ...catalogHandlers(deps),
    task: taskHandler(deps),
    // Content comes as it is now, as version 1: history lines are read and left.
    task_version: noop,
    ...linkHandlers(deps),
  };

  const reader: FormatReader & { kindOf(rec: RawRecord): string | null } = {
    // A chunk's tasks name parents and ids mapped by the chunks before it.
    preparesAhead: false,
    /** Null for a line that fails on its own (it joins whatever chunk is open). */
    kindOf(rec) {
      const p = parsedOf(rec);
      return p !== null && "kind" in p ? p.kind : null;
    },
    async prepare(records): Promise<ChunkWork> {
      const failed: Array<[number, Problem]> = [];
      const good: Line[] = [];
      let kind: JsonlObject | undefined;
      for (const rec of records) {
        const p = parsedOf(rec);
        if (p === null) continue;
        if ("problem" in p) failed.push([rec.line, p.problem]);
        else {
          kind ??= p.kind;
          if (p.kind !== kind) throw new Error(`a chunk holds ${kind} and ${p.kind} lines`);
          good.push({ line: rec.line, obj: p.obj });
        }
      }
      const work = kind === undefined ? undefined : await handlers[kind].prepare(good);
      return {
        async write(r, tally) {
          for (const [line, p] of failed) tally.fail(line, [p]);
          await work?.write(r, tally);
        },
      };
    },
  };
  return reader;
}
