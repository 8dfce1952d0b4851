import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { eventually, startS3Server, type S3Server } from "@tasksvc/testing";
import { pieces, read, sha } from "./bodies.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3BlobStore } from "../src/index.js";
import { BlobSizeMismatch, type BlobInfo, type BlobStore } from "../src/store.js";

// A real S3-API server (s3rver, libs/testing) on a free port, in a directory of its own.
let server: S3Server;
let store: BlobStore;

beforeAll(async () => {
  server = await startS3Server();
  store = await s3BlobStore(
    { kind: "s3", bucket: server.bucket, endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true },
    { credentials: server.credentials },
  );
});

afterAll(async () => {
  await store?.close();
  await server?.stop();
});

/** The first `at` bytes of `b`, then, once the server shows `key` (as `ready` wants it), the rest. */
async function* gated(key: string, b: Buffer, at: number, ready: (info: BlobInfo) => boolean = () => true): AsyncGenerator<Buffer> {
  yield b.subarray(0, at);
  await eventually(
    async () => {
      const info = await store.stat(key);
      return info !== null && ready(info);
    },
    { intervalMs: 10, what: `${key} to appear on the server` },
  );
  if (at < b.length) yield b.subarray(at);
}
async function keys(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out.sort();
}

describe("the S3 store", () => {
  it("when 3 MiB are put, then stat and get answer exactly those bytes, their size and type", async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const before = Date.now();
    await store.put("org_a/one", pieces(bytes), { size: bytes.length, contentType: "application/pdf" });
    const info = await store.stat("org_a/one");
    expect(info).toEqual({ size: bytes.length, contentType: "application/pdf", createdAt: expect.any(Date) });
    // LastModified has whole seconds.
    expect(Math.abs((info?.createdAt.getTime() ?? 0) - before)).toBeLessThan(60_000);
    const got = await store.get("org_a/one");
    expect(got?.info).toEqual(info);
    expect(sha(await read(got?.body ?? Readable.from([])))).toBe(sha(bytes));
  });

  // s3rver, unlike S3, writes an upload to the object as it arrives and keeps what arrived when
  // the request is cut off. Each body below waits until s3rver shows the partial object before
  // going on, so the failure comes after something was stored, which put must then remove.
  it("when the body has more bytes than declared, then it fails with too_large and nothing is stored", async () => {
    const bytes = randomBytes(1024 * 1024);
    const put = store.put("org_a/more", Readable.from(gated("org_a/more", bytes, 512 * 1024)), { size: bytes.length - 1, contentType: "text/plain" });
    await expect(put).rejects.toBeInstanceOf(BlobSizeMismatch);
    await expect(put).rejects.toMatchObject({ kind: "too_large", expected: bytes.length - 1 });
    expect(await store.stat("org_a/more")).toBeNull();
    expect(await keys("org_a/more")).toEqual([]);
  });

  it("when the excess byte comes after the server has stored the declared length, then it fails with too_large and nothing is stored", async () => {
    const bytes = randomBytes(200 * 1024 + 1);
    const size = bytes.length - 1;
    // The server answers once it has `size` bytes; only the byte after tells the body was longer.
    const put = store.put("org_a/late", Readable.from(gated("org_a/late", bytes, size, (info) => info.size === size)), { size, contentType: "text/plain" });
    await expect(put).rejects.toMatchObject({ name: "BlobSizeMismatch", kind: "too_large", expected: size });
    expect(await store.stat("org_a/late")).toBeNull();
  });

  it("when the body has fewer bytes than declared, then it fails with too_small and nothing is stored", async () => {
    const bytes = randomBytes(1024 * 1024);
    const put = store.put("org_a/fewer", Readable.from(gated("org_a/fewer", bytes, 512 * 1024)), { size: bytes.length + 1, contentType: "text/plain" });
    await expect(put).rejects.toBeInstanceOf(BlobSizeMismatch);
    await expect(put).rejects.toMatchObject({ kind: "too_small", expected: bytes.length + 1, received: bytes.length });
    expect(await store.stat("org_a/fewer")).toBeNull();
    expect(await keys("org_a/fewer")).toEqual([]);
  });

  it("when the source stream fails, then put fails with its error and nothing is stored", async () => {
    const bytes = randomBytes(512 * 1024);
    const broken = new Error("client went away");
    async function* body() {
      yield* gated("org_a/broken", bytes, 256 * 1024);
      throw broken;
    }
    await expect(store.put("org_a/broken", Readable.from(body()), { size: bytes.length * 2, contentType: "text/plain" })).rejects.toBe(broken);
    expect(await store.stat("org_a/broken")).toBeNull();
  });

  it("when a key is deleted, then stat and get answer null, and deleting it again is not an error", async () => {
    await store.put("org_a/gone", pieces(Buffer.from("bye")), { size: 3, contentType: "text/plain" });
    expect(await store.stat("org_a/gone")).not.toBeNull();
    await store.delete("org_a/gone");
    expect(await store.stat("org_a/gone")).toBeNull();
    expect(await store.get("org_a/gone")).toBeNull();
    await expect(store.delete("org_a/gone")).resolves.toBeUndefined();
  });

  it("when listing by prefix, then exactly the keys under that prefix are answered, with their sizes", async () => {
    for (const [key, body] of [
      ["list/x/1", "a"],
      ["list/x/2", "bb"],
      ["list/xy/3", "ccc"],
      ["list/y/4", "dddd"],
    ] as const) {
      await store.put(key, pieces(Buffer.from(body)), { size: body.length, contentType: "text/plain" });
    }
    const listed: { key: string; size: number }[] = [];
    for await (const o of store.list("list/x/")) {
      expect(o.info).toEqual({ size: o.info.size, contentType: null, createdAt: expect.any(Date) });
      listed.push({ key: o.key, size: o.info.size });
    }
    expect(listed.sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: "list/x/1", size: 1 },
      { key: "list/x/2", size: 2 },
    ]);
    expect(await keys("list/")).toEqual(["list/x/1", "list/x/2", "list/xy/3", "list/y/4"]);
    expect(await keys("list/z")).toEqual([]);
  });

  it("when more keys than one page (1000) share a prefix, then the listing follows the pages to the last key", { timeout: 120_000 }, async () => {
    const n = 1003;
    const all = Array.from({ length: n }, (_, i) => `page/${String(i).padStart(4, "0")}`);
    for (let i = 0; i < n; i += 10) {
      await Promise.all(all.slice(i, i + 10).map((k) => store.put(k, pieces(Buffer.from("x")), { size: 1, contentType: "text/plain" })));
    }
    expect(await keys("page/")).toEqual(all);
  });

  it("when a presigned PUT URL receives the declared bytes and type, then the object is stored with them", async () => {
    const bytes = randomBytes(256 * 1024);
    const url = await store.presignPut("org_a/direct", { size: bytes.length, contentType: "image/png", expiresInSeconds: 60 });
    expect(url).not.toBeNull();
    const res = await fetch(url ?? "", {
      method: "PUT",
      body: bytes,
      headers: { "content-type": "image/png", "content-length": String(bytes.length) },
    });
    expect(res.status, await res.text()).toBe(200);
    expect(await store.stat("org_a/direct")).toEqual({ size: bytes.length, contentType: "image/png", createdAt: expect.any(Date) });
    const got = await store.get("org_a/direct");
    expect(sha(await read(got?.body ?? Readable.from([])))).toBe(sha(bytes));
  });

  it("when a PUT URL is presigned, then its signature covers the content length and type", async () => {
    // S3 refuses a request that differs in a signed header; s3rver does not check v4 signatures,
    // so the URL is checked here and the refusal itself is S3's.
    const url = new URL((await store.presignPut("org_a/signed", { size: 42, contentType: "image/png", expiresInSeconds: 60 })) ?? "");
    expect(url.searchParams.get("X-Amz-SignedHeaders")?.split(";")).toEqual(expect.arrayContaining(["content-length", "content-type", "host"]));
    expect(url.searchParams.get("X-Amz-Expires")).toBe("60");
    // Nothing that would make S3 expect a checksum of some other body.
    expect([...url.searchParams.keys()].filter((k) => k.toLowerCase().includes("checksum"))).toEqual([]);
  });

  it("when a presigned GET URL is fetched, then it answers exactly the bytes, the type and the file name", async () => {
    const bytes = randomBytes(100 * 1024 + 3);
    await store.put("org_a/download", pieces(bytes), { size: bytes.length, contentType: "application/octet-stream" });
    const fileName = 'Q3 "final" résumé.pdf';
    const url = await store.presignGet("org_a/download", { expiresInSeconds: 60, fileName, contentType: "application/pdf" });
    const res = await fetch(url ?? "");
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.status, body.toString()).toBe(200);
    expect(sha(body)).toBe(sha(bytes));
    expect(res.headers.get("content-type")).toBe("application/pdf");
    const disposition = res.headers.get("content-disposition") ?? "";
    // An ASCII fallback without inner quotes, then the exact name in RFC 5987 encoding.
    const m = /^attachment; filename="([\x20\x21\x23-\x7e]*)"; filename\*=UTF-8''([A-Za-z0-9%!#$&+.^_`|~-]+)$/.exec(disposition);
    expect(m, disposition).not.toBeNull();
    expect(m?.[1]).toBe("Q3 _final_ r_sum_.pdf");
    expect(decodeURIComponent(m?.[2] ?? "")).toBe(fileName);
  });

  it("when a presigned GET URL is fetched, then the answer is not to be cached and the signature covers its response headers", async () => {
    await store.put("org_a/page.html", pieces(Buffer.from("<script>alert(1)</script>")), { size: 25, contentType: "text/html" });
    const url = new URL((await store.presignGet("org_a/page.html", { expiresInSeconds: 60, fileName: "page.html", contentType: "text/html" })) ?? "");
    expect(url.searchParams.get("response-cache-control")).toBe("private, no-store");
    expect(url.searchParams.get("response-content-disposition")).toMatch(/^attachment;/);
    // Query parameters are part of the canonical request a v4 signature covers.
    expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment;/);
  });

  it("when a key does not exist, then stat and get answer null", async () => {
    expect(await store.stat("org_a/never")).toBeNull();
    expect(await store.get("org_a/never")).toBeNull();
  });
});
