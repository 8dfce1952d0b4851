import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { Objm, type ObjectInfo, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { BlobSizeMismatch, exactly, type BlobInfo, type BlobStore, type PutOptions } from "./store.js";

export const attachmentsBucket = (namespace: string) => `${namespace}_attachments`;

const CONTENT_TYPE = "content-type";

export interface NatsBlobStoreOptions {
  replicas?: number;
}

function infoOf(o: ObjectInfo): BlobInfo {
  return { size: o.size, contentType: o.metadata?.[CONTENT_TYPE] ?? null, createdAt: new Date(o.mtime) };
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
 * Written in 128 KiB chunks, each publish awaited before the next read, so a large upload holds one
 * chunk in memory. `replicas` applies when the bucket is created only.
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
      // pipe does not forward errors.
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
      // A chunk missing ends with an error rather than a silent short file.
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
