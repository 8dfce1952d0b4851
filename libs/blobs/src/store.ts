import { Transform, type Readable, type TransformCallback } from "node:stream";

export interface BlobInfo {
  size: number;
  contentType: string | null;
  /** The sweep of orphaned uploads goes by it. */
  createdAt: Date;
}

export interface PutOptions {
  size: number;
  contentType: string;
}

/** Nothing was stored. */
export class BlobSizeMismatch extends Error {
  constructor(
    readonly kind: "too_large" | "too_small",
    readonly expected: number,
    readonly received: number,
  ) {
    super(kind === "too_large" ? `more than the declared ${expected} bytes` : `${received} of the declared ${expected} bytes`);
    this.name = "BlobSizeMismatch";
  }
}

/** Bodies stream in and out: no implementation holds a whole object in memory. */
export interface BlobStore {
  readonly kind: "nats" | "s3";
  /** Exactly `size` bytes, or a BlobSizeMismatch and nothing stored. */
  put(key: string, body: Readable, o: PutOptions): Promise<void>;
  stat(key: string): Promise<BlobInfo | null>;
  get(key: string): Promise<{ body: Readable; info: BlobInfo } | null>;
  delete(key: string): Promise<void>;
  list(prefix: string): AsyncIterable<{ key: string; info: BlobInfo }>;
  /** Null when uploads go through the gateway (the NATS store). */
  presignPut(key: string, o: PutOptions & { expiresInSeconds: number }): Promise<string | null>;
  /** Null when downloads go through the gateway. */
  presignGet(key: string, o: { expiresInSeconds: number; fileName: string; contentType: string }): Promise<string | null>;
  close(): Promise<void>;
}

/** One byte more fails the stream at once, so a client sending too much is cut off, not read to the end. */
export function exactly(size: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      seen += chunk.length;
      if (seen > size) done(new BlobSizeMismatch("too_large", size, seen));
      else done(null, chunk);
    },
    flush(done: TransformCallback) {
      done(seen === size ? null : new BlobSizeMismatch("too_small", size, seen));
    },
  });
}

/** RFC 6266: `filename` an ASCII fallback needing no escaping, `filename*` the exact name in UTF-8. */
export function attachmentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  // encodeURIComponent leaves ' ( ) * ! unescaped; RFC 5987's attr-char does not allow ' ( ) *.
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
