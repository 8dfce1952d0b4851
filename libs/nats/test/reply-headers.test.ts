import { randomUUID } from "node:crypto";
import { RawJson } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { client, connectNats, type Handlers, type NatsConnection, serve } from "../src/index.js";

// What a reply says about its data (an ETag) travels in the reply's headers, so a caller that
// passes the data on unparsed learns it without reading the bytes.
const stack = inject("stack");
const namespace = `${stack.namespace}_reply_headers_${randomUUID().slice(0, 8)}`;
const Thing = z.object({ id: z.string(), version: z.number() });
const catalog = {
  service: "replyheaderstest",
  ops: {
    tagged: { input: z.object({ id: z.string() }), output: Thing },
    raw: { input: z.object({ id: z.string() }), output: Thing },
    plain: { input: z.object({ id: z.string() }), output: Thing },
    refused: { input: z.object({ id: z.string() }), output: Thing },
  },
} as const;
const ctx = { request_id: "req_reply_headers", organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };

describe("a handler's reply headers", () => {
  let nc: NatsConnection;
  let served: { drain(): Promise<void> };
  beforeAll(async () => {
    nc = await connectNats({ url: stack.natsUrl, name: "reply-headers-test" });
    const handlers: Handlers<typeof catalog> = {
      tagged: async ({ id }, _ctx, meta) => {
        meta.headers.etag = '"7"';
        return { id, version: 7 };
      },
      // Bytes that do not start with the id and version: the ETag cannot come from them.
      raw: async ({ id }, _ctx, meta) => {
        meta.headers.etag = '"9"';
        return new RawJson(Buffer.from(JSON.stringify({ version: 9, id })));
      },
      plain: async ({ id }) => ({ id, version: 1 }),
      refused: async (_i, _ctx, meta) => {
        meta.headers.etag = '"3"';
        throw new AppError("precondition_failed", "Not that version.", { etag: '"3"' });
      },
    };
    served = serve(nc, catalog, handlers, { namespace, log: createLogger({ service: "test", level: "silent" }) });
  });
  afterAll(async () => {
    await served.drain();
    await nc.close();
  });

  it("when a handler sets an ETag, then relay() hands it on beside the bytes, which stay the service's", async () => {
    const rpc = client(nc, catalog, { namespace, timeoutMs: 2000, checkReplies: true });
    const tagged = await rpc.relay("tagged", { id: "a" }, ctx);
    expect(tagged.headers).toEqual({ etag: '"7"' });
    expect(Buffer.from(tagged.bytes).toString("utf8")).toBe('{"id":"a","version":7}');
    const raw = await rpc.relay("raw", { id: "b" }, ctx);
    expect(raw.headers).toEqual({ etag: '"9"' });
    expect(Buffer.from(raw.bytes).toString("utf8")).toBe('{"version":9,"id":"b"}');
  });

  it("when a handler sets none, then the relayed reply has none; a refusal carries its ETag in the error only", async () => {
    const rpc = client(nc, catalog, { namespace, timeoutMs: 2000 });
    expect((await rpc.relay("plain", { id: "c" }, ctx)).headers).toEqual({});
    const err = await rpc.relay("refused", { id: "d" }, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err instanceof AppError && err.etag).toBe('"3"');
    const reply = await nc.request(`${namespace}.svc.replyheaderstest.refused`, JSON.stringify({ ctx, input: { id: "d" } }), { timeout: 2000 });
    expect(reply.headers?.get("ETag")).toBe("");
    expect(reply.headers?.get("Nats-Service-Error-Code")).toBe("412");
  });
});
