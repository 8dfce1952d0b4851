import { randomUUID } from "node:crypto";
import { AppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { registry } from "@tasksvc/telemetry";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { client, connectNats, DEFAULT_MAX_PAYLOAD, pageBudget, serve, type NatsConnection } from "../src/index.js";
import { rejectionOf } from "@tasksvc/testing";

// A reply over the server's max_payload cannot be sent: the caller must hear so at once, not wait
// for its timeout (a 503 it would retry, the same work again, forever).
const stack = inject("stack");
const namespace = `${stack.namespace}_size_${randomUUID().slice(0, 8)}`;
const catalog = {
  service: "sizetest",
  ops: {
    big: { input: z.object({ bytes: z.number().int() }), output: z.object({ text: z.string() }) },
  },
} as const;
const ctx = { request_id: "req_size_test", organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };

async function tooLargeCount(): Promise<number> {
  const family = (await registry.getMetricsAsJSON()).find((m) => m.name === "tasksvc_rpc_reply_too_large_total");
  return family?.values.find((v) => v.labels.service === "sizetest" && v.labels.operation === "big")?.value ?? 0;
}

describe("serve() and max_payload", () => {
  let nc: NatsConnection;
  let served: { drain(): Promise<void> };
  beforeAll(async () => {
    nc = await connectNats({ url: stack.natsUrl, name: "serve-size-test" });
    served = serve(
      nc,
      catalog,
      { big: async ({ bytes }) => ({ text: "x".repeat(bytes) }) },
      { namespace, log: createLogger({ service: "test", level: "silent" }) },
    );
  });
  afterAll(async () => {
    await served.drain();
    await nc.close();
  });

  it("when a reply is larger than the connection's max_payload, then the caller gets a 500 internal_error naming the sizes at once, counted, and the service keeps answering", async () => {
    const max = nc.info?.max_payload ?? 0;
    expect(max).toBeGreaterThan(0);
    // A timeout would be a 503 after this long: the answer must come well before.
    const rpc = client(nc, catalog, { namespace, timeoutMs: 10_000 });
    const before = await tooLargeCount();
    const err = await rejectionOf(rpc.call("big", { bytes: max + 1 }, ctx), AppError);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code, String(err)).toBe("internal_error");
    expect(err.detail).toContain(`(${max} bytes)`);
    expect(await tooLargeCount()).toBe(before + 1);
    // Just under the limit, with the framing and headers, still goes through.
    const fits = max - 1024;
    expect((await rpc.call("big", { bytes: fits }, ctx)).text).toHaveLength(fits);
    expect(await tooLargeCount()).toBe(before + 1);
  });

  it("when the page budget is derived, then it leaves room under max_payload, and a default when the server is unknown", () => {
    expect(pageBudget({ info: undefined })).toBe(DEFAULT_MAX_PAYLOAD - 64 * 1024);
    expect(pageBudget(nc)).toBeLessThan(nc.info?.max_payload ?? 0);
    expect(pageBudget(nc)).toBeGreaterThan((nc.info?.max_payload ?? 0) / 2);
  });
});
