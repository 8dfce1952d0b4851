export * from "./store.js";
export * from "./setting.js";
export * from "./nats.js";
import type { S3BlobStoreOptions, S3Setting } from "./s3.js";
import type { BlobStore } from "./store.js";
export type { S3BlobStoreOptions, S3Setting };

/**
 * The S3 client is loaded only by a process that opens an S3 store: its modules are about 4 MB of
 * heap that every full collection would otherwise mark in every process, S3 or not.
 */
export async function s3BlobStore(setting: S3Setting, opts: S3BlobStoreOptions = {}): Promise<BlobStore> {
  const { createS3BlobStore } = await import("./s3.js");
  return createS3BlobStore(setting, opts);
}
