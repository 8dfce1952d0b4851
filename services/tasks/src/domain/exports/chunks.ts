import { CHUNK_BYTES, type ExportLine, type ExportReads, type Numbered } from "../../repo/export-reads.js";
import { readAhead } from "./read-ahead.js";

// The export's reads of tasks and versions, in chunks bounded in rows and bytes, in the file's order.

/** Numbers looked at per statement when walking the task trees. */
const WINDOW = 2000;
/** Tasks per statement at most, whatever their size. */
const ROWS = 500;
/** Task numbers whose versions one statement reads, at most VERSION_ROWS rows of them. */
const VERSION_WINDOW = 500;
const VERSION_ROWS = 1000;

/**
 * Every task in the export's order, read by `read` a chunk at a time: by depth in the parent tree,
 * then number, so a parent always comes before its subtasks.
 */
export function tasksInOrder<T>(reads: ExportReads, org: string, read: (numbers: number[]) => Promise<T[]>): AsyncGenerator<T[]> {
  return readAhead(taskGroups(reads, org), read);
}

async function* taskGroups(reads: ExportReads, org: string): AsyncGenerator<number[]> {
  const last = await reads.lastNumber(org);
  const deep = await reads.anySubtask(org);
  for (let depth = 0; ; depth++) {
    let found = false;
    for (let from = 1; from <= last; from += WINDOW) {
      const numbered = await reads.atDepth(org, depth, from, from + WINDOW);
      if (numbered.length > 0) found = true;
      yield* byBytes(numbered);
    }
    if (!found || !deep) return;
  }
}

/**
 * Every version's line, by task number then sequence, read by windows of task numbers: a window's
 * first page does not depend on the page before it, so it is read ahead; a window with more
 * versions than a page goes on from its last row.
 */
export async function* versionLinesInOrder(reads: ExportReads, org: string, userKeys: readonly string[]): AsyncGenerator<ExportLine[]> {
  const last = await reads.lastNumber(org);
  async function* windows() {
    for (let from = 1; from <= last; from += VERSION_WINDOW) yield from;
  }
  const page = (after: readonly [number, number], from: number) => reads.versionLines(org, after, from + VERSION_WINDOW, VERSION_ROWS, userKeys);
  for await (const first of readAhead(windows(), async (from) => ({ from, p: await page([from, 0], from) }))) {
    let p = first.p;
    for (;;) {
      if (p.lines.length > 0) yield p.lines;
      if (!p.more || p.last === null) break;
      p = await page(p.last, first.from);
    }
  }
}

/** Consecutive groups of at most ROWS tasks and CHUNK_BYTES of their text (one large task alone). */
function* byBytes(numbered: readonly Numbered[]): Generator<number[]> {
  let group: number[] = [];
  let bytes = 0;
  for (const n of numbered) {
    if (group.length > 0 && (group.length >= ROWS || bytes + n.bytes > CHUNK_BYTES)) {
      yield group;
      group = [];
      bytes = 0;
    }
    group.push(n.number);
    bytes += n.bytes;
  }
  if (group.length > 0) yield group;
}
