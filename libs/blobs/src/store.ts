import { Transform, type Readable, type TransformCallback } from "node:stream";

/** What the store knows of one object. */
export interface BlobInfo {
  size: number;
  contentType: string | null;
  /** When the object was written (the sweep of orphaned uploads goes by it). */
  createdAt: Date;
}

export interface PutOptions {
  /** The declared size: exactly this many bytes are stored, or nothing is (BlobSizeMismatch). */
  size: number;
  contentType: string;
}

/** The body had more (`too_large`) or fewer (`too_small`) bytes than declared; nothing was stored. */
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

/**
 * Where attachment bytes live (issue 12): one small interface, two real implementations (a
 * JetStream object store, S3). Keys are opaque strings chosen by the caller. Bodies stream in
 * and out: no implementation holds a whole object in memory.
 */
export interface BlobStore {
  readonly kind: "nats" | "s3";
  /** Streams `body` into `key`; exactly `size` bytes, or a BlobSizeMismatch and nothing stored. */
  put(key: string, body: Readable, o: PutOptions): Promise<void>;
  stat(key: string): Promise<BlobInfo | null>;
  get(key: string): Promise<{ body: Readable; info: BlobInfo } | null>;
  /** Removes the object; an absent one is not an error. */
  delete(key: string): Promise<void>;
  /** Every object whose key starts with `prefix` (for sweeps). */
  list(prefix: string): AsyncIterable<{ key: string; info: BlobInfo }>;
  /**
   * A URL the client PUTs the bytes to directly, valid `expiresInSeconds`; null when uploads go
   * through the gateway instead (the NATS store).
   */
  presignPut(key: string, o: PutOptions & { expiresInSeconds: number }): Promise<string | null>;
  /** A URL that answers the bytes directly, with this file name; null when downloads go through the gateway. */
  presignGet(key: string, o: { expiresInSeconds: number; fileName: string; contentType: string }): Promise<string | null>;
  close(): Promise<void>;
}

/**
 * Passes exactly `size` bytes through: one byte more fails the stream at once (so a client
 * sending too much is cut off, not read to the end), fewer fails it at the end.
 */
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
