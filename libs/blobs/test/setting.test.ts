import { describe, expect, it } from "vitest";
import { parseBlobStore } from "../src/setting.js";

describe("BLOB_STORE", () => {
  it("when unset or nats, then the JetStream object store", () => {
    expect(parseBlobStore("")).toEqual({ kind: "nats" });
    expect(parseBlobStore("nats")).toEqual({ kind: "nats" });
  });

  it("when an s3:// URL, then its bucket, endpoint, region and addressing", () => {
    expect(parseBlobStore("s3://files?region=eu-west-1")).toEqual({
      kind: "s3",
      bucket: "files",
      endpoint: undefined,
      region: "eu-west-1",
      forcePathStyle: false,
    });
    expect(parseBlobStore("s3://files?endpoint=http://127.0.0.1:9000")).toEqual({
      kind: "s3",
      bucket: "files",
      endpoint: "http://127.0.0.1:9000",
      region: "us-east-1",
      forcePathStyle: true,
    });
    expect(parseBlobStore("s3://files?endpoint=https://s3.example.com&path_style=false")).toMatchObject({ forcePathStyle: false });
  });

  it("when anything else, then a message naming the expected forms", () => {
    expect(() => parseBlobStore("minio")).toThrow(/nats.*s3:\/\//);
    expect(() => parseBlobStore("https://bucket")).toThrow(/s3:\/\//);
    expect(() => parseBlobStore("s3://files?endpoint=not a url")).toThrow(/endpoint/);
  });
});
