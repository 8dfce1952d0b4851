import type { Task } from "@tasksvc/contracts";
import { CHUNK_BYTES, type ExportReads, type Numbered } from "../../repo/export-reads.js";
import { toTask } from "../../repo/task-json.js";
import { readAhead } from "./read-ahead.js";

// The export's reads of tasks and versions, in chunks bounded in rows and bytes, in the file's order.

/** Numbers looked at per statement when walking the task trees. */
const WINDOW = 2000;
/** Tasks per statement at most, whatever their size. */
const ROWS = 500;
/** Task numbers whose versions one statement reads, at most VERSION_ROWS rows of them. */
const VERSION_WINDOW = 500;
const VERSION_ROWS = 1000;

/** Every task in the export's order: by depth in the parent tree, then number, so a parent always comes before its subtasks. */
export function tasksInOrder(reads: ExportReads, org: string): AsyncGenerator<Task[]> {
  return readAhead(taskGroups(reads, org), async (group) => (await reads.tasks(org, group)).map(toTask));
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

type VersionItem = Awaited<ReturnType<ExportReads["versions"]>>["items"][number];

/**
 * Every version, by task number then sequence, read by windows of task numbers: a window's first
 * page does not depend on the page before it, so it is read ahead; a window with more versions
 * than a page goes on from its last row.
 */
export async function* versionsInOrder(reads: ExportReads, org: string): AsyncGenerator<VersionItem[]> {
  const last = await reads.lastNumber(org);
  async function* windows() {
    for (let from = 1; from <= last; from += VERSION_WINDOW) yield from;
  }
  for await (const first of readAhead(windows(), (from) => reads.versions(org, [from, 0], from + VERSION_WINDOW, VERSION_ROWS).then((p) => ({ from, p })))) {
    let page = first.p;
    for (;;) {
      if (page.items.length > 0) yield page.items;
      const end = page.items[page.items.length - 1];
      if (!page.more || end === undefined) break;
      page = await reads.versions(org, [end.task_number, end.seq], first.from + VERSION_WINDOW, VERSION_ROWS);
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
