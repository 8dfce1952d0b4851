import { randomUUID } from "node:crypto";
import { AppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RawJson } from "@tasksvc/contracts";
import { client, connectNats, encodeOkReply, okReplyData, serve, type NatsConnection } from "../src/index.js";
import { rejectionOf } from "@tasksvc/testing";

const stack = inject("stack");
const namespace = `${stack.namespace}_relay_${randomUUID().slice(0, 8)}`;
const Thing = z.object({ id: z.string(), title: z.string() });
const catalog = {
  service: "relaytest",
  ops: {
    // Answers what its contract says.
    get: { input: z.object({ id: z.string() }), output: Thing },
    // Answers a field its contract does not have (call() would strip it silently).
    leaky: { input: z.object({ id: z.string() }), output: Thing },
    // Answers without a field its contract fills with a default.
    defaulted: { input: z.object({ id: z.string() }), output: Thing.extend({ status: z.string().default("TODO") }) },
    // Answers something its contract refuses.
    broken: { input: z.object({ id: z.string() }), output: Thing },
    missing: { input: z.object({ id: z.string() }), output: Thing },
  },
} as const;
const ctx = { request_id: "req_relay_test", organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };
const title = 'Quote " backslash \\ line\nend, é 🚀';

describe("relay(): a reply passed on as the service's bytes", () => {
  let nc: NatsConnection;
  let served: { drain(): Promise<void> };
  beforeAll(async () => {
    nc = await connectNats({ url: stack.natsUrl, name: "relay-test" });
    const handlers = {
      get: async ({ id }: { id: string }) => ({ id, title }),
      leaky: async ({ id }: { id: string }) => ({ id, title, secret_hash: "s3cr3t" }),
      defaulted: async ({ id }: { id: string }) => ({ id, title }),
      broken: async ({ id }: { id: string }) => ({ id, title: 42 }),
      missing: async ({ id }: { id: string }) => {
        throw new AppError("resource_not_found", `No thing ${id}.`);
      },
    };
    // The handlers break their contracts on purpose: the map is typed loosely for that.
    served = serve(nc, catalog, handlers as never, { namespace, log: createLogger({ service: "test", level: "silent" }) });
  });
  afterAll(async () => {
    await served.drain();
    await nc.close();
  });

  it("when the reply is a success, then relay() hands on exactly the bytes call() would parse", async () => {
    const rpc = client(nc, catalog, { namespace, timeoutMs: 2000 });
    const raw = await rpc.relay("get", { id: "a" }, ctx);
    expect(raw).toBeInstanceOf(RawJson);
    expect(Buffer.from(raw.bytes).toString("utf8")).toBe(JSON.stringify({ id: "a", title }));
    expect(raw.parse()).toEqual(await rpc.call("get", { id: "a" }, ctx));
  });

  it("when the reply is an error, then relay() throws the service's AppError, as call() does", async () => {
    const rpc = client(nc, catalog, { namespace, timeoutMs: 2000 });
    const err = await rejectionOf(rpc.relay("missing", { id: "x\ny" }, ctx), AppError);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("resource_not_found");
    expect(err.detail).toBe("No thing x\ny.");
  });

  it("when replies are checked, then a field outside the contract, a default the schema would add, or a wrong type is a 500, never passed on", async () => {
    const checked = client(nc, catalog, { namespace, timeoutMs: 2000, checkReplies: true });
    expect((await checked.relay("get", { id: "a" }, ctx)).parse()).toEqual({ id: "a", title });
    for (const op of ["leaky", "defaulted", "broken"] as const) {
      const err = await rejectionOf(checked.relay(op, { id: "a" }, ctx), AppError);
      expect(err, op).toBeInstanceOf(AppError);
      expect(err.code, op).toBe("internal_error");
    }
    // Unchecked (production), the bytes pass as they are: the check is what keeps them honest.
    const unchecked = client(nc, catalog, { namespace, timeoutMs: 2000 });
    expect((await unchecked.relay("leaky", { id: "a" }, ctx)).parse()).toEqual({ id: "a", title, secret_hash: "s3cr3t" });
  });
});

describe("okReplyData", () => {
  it("when a reply is a success in serve()'s framing, then the data's bytes come back; anything else is undefined", () => {
    for (const data of [null, 0, "x", { a: [1, { b: "}" }] }, [], title]) {
      const bytes = okReplyData(encodeOkReply(data));
      expect(bytes && JSON.parse(bytes.toString("utf8"))).toEqual(data);
    }
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    expect(okReplyData(enc({ ok: false, error: { code: "x" } }))).toBeUndefined();
    expect(okReplyData(enc({ data: 1, ok: true }))).toBeUndefined();
    expect(okReplyData(new TextEncoder().encode('{"ok":true,"data":'))).toBeUndefined();
    expect(okReplyData(new Uint8Array())).toBeUndefined();
  });
});
