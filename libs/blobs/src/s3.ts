import { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { BlobStoreSetting } from "./setting.js";
import { attachmentDisposition, exactly, type BlobInfo, type BlobStore, type PutOptions } from "./store.js";

export type S3Setting = Extract<BlobStoreSetting, { kind: "s3" }>;

export interface S3BlobStoreOptions {
  /** Otherwise the SDK's default chain (AWS_* variables, profiles, instance roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** HeadObject answers a bare 404 with no error code. */
function isNotFound(e: unknown): boolean {
  return e instanceof NotFound || (e instanceof S3ServiceException && e.$metadata.httpStatusCode === 404);
}

/** Puts stream the body with its declared length in a single PutObject, so nothing is buffered. */
export function createS3BlobStore(setting: S3Setting, opts: S3BlobStoreOptions = {}): BlobStore {
  const client = new S3Client({
    region: setting.region,
    endpoint: setting.endpoint,
    forcePathStyle: setting.forcePathStyle,
    credentials: opts.credentials,
    // The default sends streamed bodies as aws-chunked, which not every S3-compatible server decodes; the byte count is checked anyway.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const Bucket = setting.bucket;

  return {
    kind: "s3",

    async put(key: string, body: Readable, o: PutOptions): Promise<void> {
      const counted = body.pipe(exactly(o.size));
      // pipe does not forward errors.
      body.once("error", (err) => counted.destroy(err));
      // Nor does the SDK's pipe: without the abort, a body cut short would leave the request waiting.
      let failure: Error | undefined;
      const abort = new AbortController();
      counted.once("error", (err) => {
        failure = err;
        abort.abort(err);
      });
      try {
        await client.send(new PutObjectCommand({ Bucket, Key: key, Body: counted, ContentLength: o.size, ContentType: o.contentType }), {
          abortSignal: abort.signal,
        });
        // S3 may answer once it has the declared length: whether one byte more follows is known only at the end.
        if (!counted.readableEnded) {
          counted.unpipe();
          counted.resume();
          await finished(counted);
        }
      } catch (e) {
        // The body's own failure is the one to answer; any other error is the server's, and it stored nothing.
        if (failure === undefined) throw e;
      }
      if (failure !== undefined) {
        // For servers that keep what arrived, and S3's object when the excess came after its answer; also removes an older object under the key.
        await client.send(new DeleteObjectCommand({ Bucket, Key: key })).catch(() => undefined);
        throw failure;
      }
    },

    async stat(key: string): Promise<BlobInfo | null> {
      try {
        const r = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        return { size: r.ContentLength ?? 0, contentType: r.ContentType ?? null, createdAt: r.LastModified ?? new Date(0) };
      } catch (e) {
        if (isNotFound(e)) return null;
        throw e;
      }
    },

    async get(key: string): Promise<{ body: Readable; info: BlobInfo } | null> {
      let r: GetObjectCommandOutput;
      try {
        r = await client.send(new GetObjectCommand({ Bucket, Key: key }));
      } catch (e) {
        if (e instanceof NoSuchKey) return null;
        throw e;
      }
      if (!(r.Body instanceof Readable)) throw new Error("expected a Node stream as the body of GetObject");
      return {
        body: r.Body,
        info: { size: r.ContentLength ?? 0, contentType: r.ContentType ?? null, createdAt: r.LastModified ?? new Date(0) },
      };
    },

    async delete(key: string): Promise<void> {
      // S3 answers 204 for an absent key too.
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
    },

    async *list(prefix: string): AsyncIterable<{ key: string; info: BlobInfo }> {
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken }));
        for (const o of page.Contents ?? []) {
          if (o.Key === undefined) continue;
          yield { key: o.Key, info: { size: o.Size ?? 0, contentType: null, createdAt: o.LastModified ?? new Date(0) } };
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken !== undefined);
    },

    /** Length and type are signed, so S3 refuses a PUT that differs; the bytes are not, and the URL works until it expires. */
    async presignPut(key: string, o: PutOptions & { expiresInSeconds: number }): Promise<string> {
      return getSignedUrl(client, new PutObjectCommand({ Bucket, Key: key, ContentLength: o.size, ContentType: o.contentType }), {
        expiresIn: o.expiresInSeconds,
        signableHeaders: new Set(["content-length", "content-type"]),
      });
    },

    /** Signed response headers a holder cannot change; nosniff and a CSP cannot be set on an object, which is served from the bucket's origin. */
    async presignGet(key: string, o: { expiresInSeconds: number; fileName: string; contentType: string }): Promise<string> {
      return getSignedUrl(
        client,
        new GetObjectCommand({
          Bucket,
          Key: key,
          ResponseContentDisposition: attachmentDisposition(o.fileName),
          ResponseContentType: o.contentType,
          ResponseCacheControl: "private, no-store",
        }),
        { expiresIn: o.expiresInSeconds },
      );
    },

    async close(): Promise<void> {
      client.destroy();
    },
  };
}
