import { z } from "zod";

/** BLOB_STORE (DESIGN.md 6): `nats` (the default), or `s3://bucket?endpoint=…&region=…&path_style=true`. */
export type BlobStoreSetting =
  | { kind: "nats" }
  | {
      kind: "s3";
      bucket: string;
      /** An S3-compatible endpoint (MinIO, a test server); AWS itself when absent. */
      endpoint: string | undefined;
      region: string;
      /** Path-style addressing (`endpoint/bucket/key`), which most S3-compatible servers need. */
      forcePathStyle: boolean;
    };

export function parseBlobStore(value: string): BlobStoreSetting {
  if (value === "" || value === "nats") return { kind: "nats" };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error("expected `nats` or an s3:// URL such as s3://bucket?region=eu-west-1");
  }
  if (url.protocol !== "s3:" || url.hostname === "") throw new Error("expected `nats` or an s3:// URL naming a bucket, such as s3://bucket?region=eu-west-1");
  const endpoint = url.searchParams.get("endpoint") ?? undefined;
  if (endpoint !== undefined) {
    try {
      new URL(endpoint);
    } catch {
      throw new Error("the s3:// URL's endpoint must be a URL, such as http://127.0.0.1:9000");
    }
  }
  const pathStyle = url.searchParams.get("path_style");
  return {
    kind: "s3",
    bucket: url.hostname,
    endpoint,
    region: url.searchParams.get("region") ?? "us-east-1",
    forcePathStyle: pathStyle === null ? endpoint !== undefined : pathStyle === "true",
  };
}

/** The BLOB_STORE setting for a process's config schema. */
export const blobStoreSetting = z
  .string()
  .default("nats")
  .transform((v, ctx) => {
    try {
      return parseBlobStore(v);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: e instanceof Error ? e.message : String(e) });
      return z.NEVER;
    }
  });
