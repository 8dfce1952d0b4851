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
import { exactly, type BlobInfo, type BlobStore, type PutOptions } from "./store.js";

export type S3Setting = Extract<BlobStoreSetting, { kind: "s3" }>;

export interface S3BlobStoreOptions {
  /** Static keys (tests, a local S3-compatible server); otherwise the SDK's default chain (AWS_* variables, profiles, instance roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/**
 * `Content-Disposition: attachment` for a user's file name (RFC 6266): `filename` is an ASCII
 * fallback for old clients (non-ASCII, quotes, backslashes and controls replaced by `_`, so the
 * quoted string needs no escaping), `filename*` the exact name in UTF-8 (RFC 5987), which clients
 * that understand it prefer.
 */
export function attachmentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  // encodeURIComponent leaves ' ( ) * ! unescaped; RFC 5987's attr-char does not allow ' ( ) *.
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** HeadObject answers a bare 404 (no body, so no error code): NotFound, or any 404 from a compatible server. */
function isNotFound(e: unknown): boolean {
  return e instanceof NotFound || (e instanceof S3ServiceException && e.$metadata.httpStatusCode === 404);
}

/**
 * The store for BLOB_STORE=s3://… (AWS S3 or an S3-compatible server). Puts stream the body with
 * its declared length (a single PutObject, up to S3's 5 GiB limit), so nothing is buffered;
 * clients may also upload and download directly with presigned URLs.
 */
export function s3BlobStore(setting: S3Setting, opts: S3BlobStoreOptions = {}): BlobStore {
  const client = new S3Client({
    region: setting.region,
    endpoint: setting.endpoint,
    forcePathStyle: setting.forcePathStyle,
    credentials: opts.credentials,
    // The default (WHEN_SUPPORTED) sends a streamed body as aws-chunked with a trailing CRC32,
    // which S3-compatible servers do not all decode (they store the chunk framing as the bytes),
    // and would put a checksum of the empty body into presigned PUT URLs. The byte count is
    // checked by `exactly` and by S3 against Content-Length; TLS covers the transport.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const Bucket = setting.bucket;

  return {
    kind: "s3",

    async put(key: string, body: Readable, o: PutOptions): Promise<void> {
      const counted = body.pipe(exactly(o.size));
      // A failure of the source must fail the count too (pipe does not forward errors).
      body.once("error", (err) => counted.destroy(err));
      // The SDK pipes the body into the request, and pipe does not forward errors either: without
      // the abort, a body cut short would leave the request waiting for the missing bytes.
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
        // S3 answers once it has the declared length, which may be before the body has ended:
        // whether one byte more follows is only known at the end, so read on to it.
        if (!counted.readableEnded) {
          counted.unpipe();
          counted.resume();
          await finished(counted);
        }
      } catch (e) {
        // The body's own failure (a BlobSizeMismatch, the client gone) is the one to answer, not
        // the SDK's abort error; any other error is the server's, and it stored nothing.
        if (failure === undefined) throw e;
      }
      if (failure !== undefined) {
        // S3 never stores a request cut off mid-body; this is for servers that keep what arrived,
        // and for the object S3 did store when the excess came after its answer. It also removes
        // an older object under the same key, which is what "nothing stored" means for a reused key.
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
      // In Node the SDK answers the response stream itself (an IncomingMessage).
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
          // Listings carry no content type; a caller that needs it stats the key.
          yield { key: o.Key, info: { size: o.Size ?? 0, contentType: null, createdAt: o.LastModified ?? new Date(0) } };
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken !== undefined);
    },

    /**
     * Content-Length and Content-Type are signed headers of the URL (X-Amz-SignedHeaders), so S3
     * refuses (403 SignatureDoesNotMatch) a PUT whose length or type differs from the declared
     * ones, and stores exactly `size` bytes or nothing. The presigner leaves content-type
     * unsigned by default; `signableHeaders` brings it back. Not enforced: the bytes themselves
     * (the payload is UNSIGNED-PAYLOAD), and the URL may be used more than once until it expires.
     */
    async presignPut(key: string, o: PutOptions & { expiresInSeconds: number }): Promise<string> {
      return getSignedUrl(client, new PutObjectCommand({ Bucket, Key: key, ContentLength: o.size, ContentType: o.contentType }), {
        expiresIn: o.expiresInSeconds,
        signableHeaders: new Set(["content-length", "content-type"]),
      });
    },

    /**
     * The response headers are query parameters covered by the signature, so a holder cannot
     * change them. They are what S3 lets a URL set (type, disposition, cache control, encoding,
     * language, expiry): `attachment` and `private, no-store` as the gateway's downloads send.
     * `X-Content-Type-Options` and `Content-Security-Policy` are not among them, nor settable on an
     * object; the bytes come from the bucket's origin, never the API's.
     */
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
