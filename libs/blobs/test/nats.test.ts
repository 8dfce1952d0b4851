import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { pieces, read, sha } from "./bodies.js";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { attachmentsBucket, natsBlobStore } from "../src/nats.js";
import { BlobSizeMismatch, type BlobStore } from "../src/store.js";

// Against the real JetStream of the test run, in a bucket of this file's own namespace.
const stack = inject("stack");
const namespace = `${stack.namespace}_blobs`;
let nc: NatsConnection;
let store: BlobStore;

beforeAll(async () => {
  nc = await connect({ servers: stack.natsUrl });
  store = await natsBlobStore(nc, namespace);
});

afterAll(async () => {
  await (await new Objm(nc).open(attachmentsBucket(namespace))).destroy();
  await nc.drain();
});

describe("the JetStream object store", () => {
  it("when 3 MiB are put, then stat and get answer exactly those bytes and their type", async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    await store.put("org_a/one", pieces(bytes), { size: bytes.length, contentType: "application/pdf" });
    expect(await store.stat("org_a/one")).toEqual({ size: bytes.length, contentType: "application/pdf", createdAt: expect.any(Date) });
    const got = await store.get("org_a/one");
    expect(got?.info.contentType).toBe("application/pdf");
    expect(sha(await read(got?.body ?? Readable.from([])))).toBe(sha(bytes));
  });

  it("when the body has one byte more or fewer than declared, then it is refused and nothing is stored", async () => {
    const bytes = randomBytes(300 * 1024);
    const more = store.put("org_a/more", pieces(bytes), { size: bytes.length - 1, contentType: "text/plain" });
    await expect(more).rejects.toBeInstanceOf(BlobSizeMismatch);
    await expect(more).rejects.toMatchObject({ kind: "too_large" });
    const fewer = store.put("org_a/fewer", pieces(bytes), { size: bytes.length + 1, contentType: "text/plain" });
    await expect(fewer).rejects.toMatchObject({ kind: "too_small", received: bytes.length });
    expect(await store.stat("org_a/more")).toBeNull();
    expect(await store.stat("org_a/fewer")).toBeNull();
  });

  it("when deleted, then the object is gone; listing by prefix shows only that prefix; a missing key answers null", async () => {
    await store.put("org_b/x", Readable.from([Buffer.from("hello")]), { size: 5, contentType: "text/plain" });
    await store.put("org_b/y", Readable.from([Buffer.from("world!")]), { size: 6, contentType: "text/plain" });
    await store.put("org_c/z", Readable.from([Buffer.from("z")]), { size: 1, contentType: "text/plain" });
    const listed = [];
    for await (const o of store.list("org_b/")) listed.push([o.key, o.info.size]);
    expect(listed.sort()).toEqual([
      ["org_b/x", 5],
      ["org_b/y", 6],
    ]);
    await store.delete("org_b/x");
    await store.delete("org_b/x");
    expect(await store.stat("org_b/x")).toBeNull();
    expect(await store.get("org_b/x")).toBeNull();
    expect(await store.get("nothing/here")).toBeNull();
    expect(await store.presignPut("org_b/y", { size: 6, contentType: "text/plain", expiresInSeconds: 60 })).toBeNull();
  });

  it("when a reader takes one chunk and pauses, then only a few chunks have been pulled from the server, not the whole object", async () => {
    const bytes = randomBytes(40 * 512 * 1024);
    await store.put("org_d/big", pieces(bytes), { size: bytes.length, contentType: "text/csv" });
    const got = await store.get("org_d/big");
    const body = got?.body ?? Readable.from([]);
    const first: Buffer = await new Promise((resolve) =>
      body.once("data", (c: Buffer) => {
        body.pause();
        resolve(c);
      }),
    );
    expect(first.length).toBeGreaterThan(0);
    // What a reader that stopped has cost: the chunks still waiting on the server for its pulls (the object is 40).
    await new Promise((r) => setTimeout(r, 300));
    const stored = await (await new Objm(nc).open(attachmentsBucket(namespace))).info("org_d/big");
    // Written in 512 KiB chunks: the library's 128 KiB ones made a large upload half as fast.
    expect(stored?.chunks).toBe(40);
    const nuid = stored?.nuid;
    const pending = [];
    for await (const c of (await jetstreamManager(nc)).consumers.list(`OBJ_${attachmentsBucket(namespace)}`)) {
      if (c.config.filter_subject === `$O.${attachmentsBucket(namespace)}.C.${nuid}`) pending.push(c.num_pending);
    }
    expect(pending.length).toBeGreaterThan(0);
    expect(Math.min(...pending)).toBeGreaterThanOrEqual(40 - 8);
    body.resume();
    expect(sha(Buffer.concat([first, await read(body)]))).toBe(sha(bytes));
  });
});
