import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { jetstream } from "@nats-io/jetstream";
import { Objm, type ObjectInfo, type ObjectStore, setSha256Backend } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { BlobSizeMismatch, exactly, type BlobInfo, type BlobStore, type PutOptions } from "./store.js";

// The library hashes every upload with a pure-JS SHA-256 unless told otherwise: node:crypto's is
// several times faster, and a large export spent a good part of its upload there.
setSha256Backend("native");

export const attachmentsBucket = (namespace: string) => `${namespace}_attachments`;

const CONTENT_TYPE = "content-type";

export interface NatsBlobStoreOptions {
  replicas?: number;
}

function infoOf(o: ObjectInfo): BlobInfo {
  return { size: o.size, contentType: o.metadata?.[CONTENT_TYPE] ?? null, createdAt: new Date(o.mtime) };
}

/**
 * Objects are written in chunks of 512 KiB, well under a 1 MiB max_payload: a chunk is one awaited
 * publish, and 128 KiB chunks (the library's default) held a large upload to about half the rate.
 */
const CHUNK_BYTES = 512 * 1024;
/** Chunks pulled at a time by a read: 1 MiB of 512 KiB chunks (objects written before have 128 KiB ones). */
const PULL_CHUNKS = 2;
const PULL_WAIT_MS = 10_000;

/** `SHA-256=` then hex or base64 (either alphabet), as object stores write it; null when it is neither. */
function digestBytes(digest: string): Buffer | null {
  if (!digest.startsWith("SHA-256=")) return null;
  const text = digest.slice("SHA-256=".length);
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  return bytes.length === 32 ? bytes : null;
}

/**
 * On a cluster, replicas that start together race to create the bucket, and the loser's request
 * may time out while the new stream elects its leader: try again a few times.
 */
async function createBucket(nc: NatsConnection, bucket: string, replicas: number): Promise<ObjectStore> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await new Objm(nc).create(bucket, { replicas });
    } catch (e) {
      if (attempt >= 5 || (e as { name?: unknown }).name !== "TimeoutError") throw e;
    }
  }
}

/**
 * Each chunk's publish is awaited before the next read, so a large upload holds one chunk in
 * memory. `replicas` applies when the bucket is created only.
 */
export async function natsBlobStore(nc: NatsConnection, namespace: string, opts: NatsBlobStoreOptions = {}): Promise<BlobStore> {
  const os = await createBucket(nc, attachmentsBucket(namespace), opts.replicas ?? 1);

  async function info(key: string): Promise<ObjectInfo | null> {
    const o = await os.info(key);
    return o && !o.deleted ? o : null;
  }

  /**
   * The object's chunks, pulled a few at a time as the reader takes them: the library's own get()
   * takes in every chunk as fast as the server sends it, so a slow reader (an import writing each
   * chunk to the database) would hold the whole file in memory. Its size and digest are checked at
   * the end, so a chunk missing ends with an error rather than a silent short file.
   */
  async function* chunksOf(o: ObjectInfo): AsyncGenerator<Uint8Array> {
    if (o.size === 0) return;
    // One subject as a string, not a list: NATS 2.9 servers take no list of filters.
    const consumer = await jetstream(nc).consumers.get(`OBJ_${o.bucket}`, { filter_subjects: `$O.${o.bucket}.C.${o.nuid}` });
    const sha = createHash("sha256");
    let received = 0;
    try {
      for (;;) {
        // Taken whole before any is handed on, so a reader that pauses never outlives the pull.
        const pulled: Array<{ data: Uint8Array; last: boolean }> = [];
        for await (const m of await consumer.fetch({ max_messages: PULL_CHUNKS, expires: PULL_WAIT_MS })) {
          pulled.push({ data: m.data, last: m.info.pending === 0 });
          if (m.info.pending === 0) break;
        }
        if (pulled.length === 0) throw new Error(`no chunk of ${o.name} arrived within ${PULL_WAIT_MS} ms`);
        for (const c of pulled) {
          received += c.data.length;
          sha.update(c.data);
          if (c.data.length > 0) yield c.data;
          if (!c.last) continue;
          const expected = digestBytes(o.digest);
          if (received !== o.size || (expected !== null && !expected.equals(sha.digest())))
            throw new Error(`${o.name} read back differs from what was stored (size or digest)`);
          return;
        }
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
  }

  return {
    kind: "nats",
    async put(key: string, body: Readable, o: PutOptions): Promise<void> {
      const counted = body.pipe(exactly(o.size));
      // pipe does not forward errors.
      body.once("error", (err) => counted.destroy(err));
      try {
        await os.put(
          { name: key, metadata: { [CONTENT_TYPE]: o.contentType }, options: { max_chunk_size: CHUNK_BYTES } },
          Readable.toWeb(counted) as unknown as ReadableStream<Uint8Array>,
        );
      } catch (e) {
        // os.put purged its chunks; the size check's own error is the one to answer.
        if (e instanceof BlobSizeMismatch) throw e;
        const cause: unknown = e instanceof Error ? e.cause : undefined;
        if (cause instanceof BlobSizeMismatch) throw cause;
        throw e;
      }
    },

    async stat(key: string): Promise<BlobInfo | null> {
      const o = await info(key);
      return o && infoOf(o);
    },

    async get(key: string): Promise<{ body: Readable; info: BlobInfo } | null> {
      const o = await info(key);
      if (!o) return null;
      // Two chunks buffered ahead of the reader (Readable.from's default is 16, 8 MiB of chunks).
      return { body: Readable.from(chunksOf(o), { highWaterMark: 2 }), info: infoOf(o) };
    },

    async delete(key: string): Promise<void> {
      if (await info(key)) await os.delete(key);
    },

    async *list(prefix: string): AsyncIterable<{ key: string; info: BlobInfo }> {
      for (const o of await os.list()) {
        if (!o.deleted && o.name.startsWith(prefix)) yield { key: o.name, info: infoOf(o) };
      }
    },

    presignPut: async () => null,
    presignGet: async () => null,
    close: async () => undefined,
  };
}
