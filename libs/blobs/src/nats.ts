import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { Objm, type ObjectInfo, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { BlobSizeMismatch, exactly, type BlobInfo, type BlobStore, type PutOptions } from "./store.js";

/** The bucket of a namespace: object store names allow letters, digits, `-` and `_`. */
export const attachmentsBucket = (namespace: string) => `${namespace}_attachments`;

const CONTENT_TYPE = "content-type";

export interface NatsBlobStoreOptions {
  /** JetStream replicas of the bucket's stream when it is created (1..5; default 1). */
  replicas?: number;
}

function infoOf(o: ObjectInfo): BlobInfo {
  return { size: o.size, contentType: o.metadata?.[CONTENT_TYPE] ?? null, createdAt: new Date(o.mtime) };
}

/**
 * Creates the bucket, or opens it when it exists. On a JetStream cluster, replicas that start
 * together race to create it: the server answers a second identical create by forwarding it as a
 * stream info to the new stream's leader, which may not be elected yet, and the request times
 * out. The bucket is there by then (or soon): try again a few times.
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
 * The default store (BLOB_STORE=nats): a JetStream object store bucket per NATS_NAMESPACE. An
 * object is written in 128 KiB chunks, each publish awaited before the next read, so a large
 * upload holds one chunk in memory, not the file; a failed write purges the chunks it wrote.
 * Uploads and downloads go through the gateway (no presigned URLs).
 *
 * `replicas`: copies JetStream keeps of the bucket's stream (NATS_STREAM_REPLICAS; default 1). It
 * applies when the bucket is created: an existing bucket keeps the replicas it was made with.
 */
export async function natsBlobStore(nc: NatsConnection, namespace: string, opts: NatsBlobStoreOptions = {}): Promise<BlobStore> {
  const os = await createBucket(nc, attachmentsBucket(namespace), opts.replicas ?? 1);

  async function info(key: string): Promise<ObjectInfo | null> {
    const o = await os.info(key);
    return o && !o.deleted ? o : null;
  }

  return {
    kind: "nats",
    async put(key: string, body: Readable, o: PutOptions): Promise<void> {
      const counted = body.pipe(exactly(o.size));
      // A failure of the source must fail the count too (pipe does not forward errors).
      body.once("error", (err) => counted.destroy(err));
      try {
        await os.put({ name: key, metadata: { [CONTENT_TYPE]: o.contentType } }, Readable.toWeb(counted) as unknown as ReadableStream<Uint8Array>);
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
      const r = await os.get(key);
      if (!r || r.info.deleted) return null;
      const body = Readable.fromWeb(r.data as unknown as WebReadableStream<Uint8Array>);
      // A stream cut short (a chunk missing) ends with an error rather than a silent short file.
      r.error.then(
        (err) => {
          if (err) body.destroy(err);
        },
        (err: unknown) => body.destroy(err instanceof Error ? err : new Error(String(err))),
      );
      return { body, info: infoOf(r.info) };
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
