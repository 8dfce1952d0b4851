import { createReadStream, createWriteStream } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import { Readable } from "node:stream";
import { finished } from "node:stream/promises";

/** Written in blocks of this size: one write per block, not per line. */
const BLOCK = 64 * 1024;

/** A file written line by line with the disk's backpressure, so memory holds one block whatever the file's size. */
export function fileSink(path: string) {
  const out = createWriteStream(path, { flags: "w", mode: 0o600 });
  let failure: Error | undefined;
  out.on("error", (e) => {
    failure = e;
  });
  let pending = "";
  let bytes = 0;
  const flush = async () => {
    if (failure) throw failure;
    if (pending === "") return;
    const block = Buffer.from(pending, "utf8");
    pending = "";
    bytes += block.length;
    if (!out.write(block)) await once(out, "drain");
  };
  return {
    path,
    async write(text: string): Promise<void> {
      pending += text;
      if (pending.length >= BLOCK) await flush();
    },
    /**
     * Line by line, waiting only when a block is full: no string or buffer past a block, so none
     * lands in V8's large-object space, which only a full collection frees (a chunk's lines
     * written as one string grew the process by 150 MB over a million tasks).
     */
    async writeLines(lines: readonly string[]): Promise<void> {
      for (const l of lines) {
        pending += l;
        if (pending.length >= BLOCK) await flush();
      }
    },
    /** The file's size in bytes once closed. */
    async close(): Promise<number> {
      await flush();
      out.end();
      await finished(out);
      if (failure) throw failure;
      return bytes;
    },
    /** After a failure: closes without waiting for the disk. */
    abandon(): void {
      out.destroy();
    },
  };
}
export type FileSink = ReturnType<typeof fileSink>;

/** The files one after the other, read as they are sent. */
export function concatenated(paths: readonly string[]): Readable {
  return Readable.from(
    (async function* () {
      for (const p of paths) for await (const chunk of createReadStream(p)) yield chunk as Buffer;
    })(),
  );
}

export async function sizeOf(path: string): Promise<number> {
  return (await stat(path)).size;
}

export const removeFiles = (paths: readonly string[]) => Promise.all(paths.map((p) => rm(p, { force: true })));

/** Its own files carry the process id, so a replica sharing the directory never removes a file another still writes. */
export const tempName = (dir: string, exportId: string, part: string) => join(dir, `tasksvc-export-${process.pid}-${exportId}-${part}`);

/** Files of processes that are gone (killed mid-export): nothing will read them again. */
export async function removeOrphans(dir: string): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const m = /^tasksvc-export-(\d+)-/.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    await rm(join(dir, name), { force: true });
    removed++;
  }
  return removed;
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: a process of another user holds the id, so it is alive.
    return (e as { code?: string }).code === "EPERM";
  }
}
