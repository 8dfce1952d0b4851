import { randomUUID } from "node:crypto";
import { AppError } from "@tasksvc/errors";
import { createLogger } from "@tasksvc/logger";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { client, connectNats, headerSafe, serve, type NatsConnection } from "../src/index.js";
import { eventually, rejectionOf } from "@tasksvc/testing";
import { rpcServerInFlight } from "@tasksvc/telemetry";

const stack = inject("stack");
const namespace = `${stack.namespace}_serve_${randomUUID().slice(0, 8)}`;
const catalog = {
  service: "servetest",
  ops: {
    echo: { input: z.object({ text: z.string() }), output: z.object({ text: z.string() }) },
    explode: { input: z.object({ text: z.string() }), output: z.object({}) },
  },
} as const;
const ctx = { request_id: "req_serve_test", organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };

describe("serve()", () => {
  let nc: NatsConnection;
  let served: { drain(): Promise<void> };
  const rejections: unknown[] = [];
  const onRejection = (r: unknown) => rejections.push(r);
  beforeAll(async () => {
    process.on("unhandledRejection", onRejection);
    nc = await connectNats({ url: stack.natsUrl, name: "serve-test" });
    served = serve(
      nc,
      catalog,
      {
        echo: async ({ text }) => ({ text }),
        explode: async ({ text }) => {
          throw new AppError("resource_not_found", `No thing ${text}.`);
        },
      },
      { namespace, log: createLogger({ service: "test", level: "silent" }) },
    );
  });
  afterAll(async () => {
    process.off("unhandledRejection", onRejection);
    await served.drain();
    await nc.close();
  });

  it("when an error detail quotes input with CR, LF, NUL or non-ASCII, then the caller gets the error and the service keeps answering", async () => {
    const rpc = client(nc, catalog, { namespace, timeoutMs: 2000 });
    for (const text of ["a\nb", "a\r\nb", "a\u0000b", "é\ud800x", "x".repeat(5000)]) {
      const err = await rejectionOf(rpc.call("explode", { text }, ctx), AppError);
      expect(err).toBeInstanceOf(AppError);
      expect(err.code).toBe("resource_not_found");
      expect(err.detail).toBe(`No thing ${text}.`);
    }
    expect(await rpc.call("echo", { text: "still here" }, ctx)).toEqual({ text: "still here" });
    expect(rejections).toEqual([]);
  });
});

describe("headerSafe", () => {
  it("when a value has control characters, non-ASCII or lone surrogates, then the result is printable ASCII within the limit", () => {
    expect(headerSafe("No task a\nb.")).toBe("No task a b.");
    expect(headerSafe("tab\there\u0000\u007f")).toBe("tab here");
    expect(headerSafe("café")).toBe("caf%C3%A9");
    expect(headerSafe("x\ud800y")).toBe("x%EF%BF%BDy");
    expect(headerSafe("y".repeat(1000))).toHaveLength(256);
    for (const v of ["a\r\nb", "é".repeat(300), "\ud800".repeat(300)]) expect(headerSafe(v)).toMatch(/^[\x20-\x7e]{0,256}$/);
  });
});

describe("serve() and the in-flight gauge", () => {
  it("when requests are in hand, then tasksvc_rpc_server_in_flight counts them at scrape time, back to 0 once answered, and a drained catalog no longer counts", async () => {
    const nc = await connectNats({ url: stack.natsUrl, name: "serve-gauge-test" });
    const ns = `${namespace}_gauge`;
    const gated = { service: `gaugetest_${randomUUID().slice(0, 8)}`, ops: { wait: { input: z.object({}), output: z.object({}) } } } as const;
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let arrived = 0;
    const served = serve(
      nc,
      gated,
      {
        wait: async () => {
          arrived++;
          await gate;
          return {};
        },
      },
      { namespace: ns, log: createLogger({ service: "test", level: "silent" }) },
    );
    const inFlight = async () => (await rpcServerInFlight.get()).values.find((v) => v.labels.service === gated.service)?.value;
    try {
      const rpc = client(nc, gated, { namespace: ns, timeoutMs: 10_000 });
      const calls = [rpc.call("wait", {}, ctx), rpc.call("wait", {}, ctx), rpc.call("wait", {}, ctx)];
      await eventually(() => expect(arrived).toBe(3));
      expect(await inFlight()).toBe(3);
      open();
      await Promise.all(calls);
      await eventually(async () => expect(await inFlight()).toBe(0));
    } finally {
      open();
      await served.drain();
      await nc.close();
    }
    // Its last value stays, but no scrape moves it any more.
    rpcServerInFlight.reset();
    expect(await inFlight()).toBeUndefined();
  });
});
