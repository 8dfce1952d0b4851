import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { gatewayRepo, type GatewayRepo } from "../src/repo/gateway-repo.js";

const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "gateway", max: 3 });

afterAll(async () => {
  await db.end({ timeout: 1 });
});

/** Runs one repository write in a transaction and answers the transaction's commit mode after it. */
const commitModeAfter = (write: (repo: GatewayRepo) => Promise<unknown>) =>
  db.tx(async (t) => {
    await write(gatewayRepo(t));
    const [row] = await t<{ mode: string }[]>`select current_setting('synchronous_commit') as mode`;
    return row?.mode;
  });

describe("the gateway's Idempotency-Key records", () => {
  it("when a key is claimed and its outcome stored, then each write commits asynchronously, since the service's own record is the guarantee", async () => {
    const credential = newId("key");
    expect(await commitModeAfter((repo) => repo.claimIdempotencyKeys([{ credentialId: credential, key: "async-1", fingerprint: "fingerprint" }], 4_000))).toBe(
      "off",
    );
    expect(
      await commitModeAfter((repo) =>
        repo.storeIdempotentOutcomes([
          { credentialId: credential, key: "async-1", status: 201, body: '{"id":"x"}', headers: { "content-type": "application/json" } },
        ]),
      ),
    ).toBe("off");
    const record = await gatewayRepo(db.sql).idempotencyRecord(credential, "async-1");
    expect(record).toEqual({
      fingerprint: "fingerprint",
      status: 201,
      response_body: '{"id":"x"}',
      response_headers: { "content-type": "application/json" },
      replay_from_service: false,
    });
  });

  it("when the outcome held a secret, then only its status is stored, marked to be replayed by the service", async () => {
    const credential = newId("key");
    const repo = gatewayRepo(db.sql);
    expect(await repo.claimIdempotencyKeys([{ credentialId: credential, key: "secret-1", fingerprint: "fingerprint" }], 4_000)).toEqual([true]);
    await repo.storeIdempotentOutcomes([
      {
        credentialId: credential,
        key: "secret-1",
        status: 201,
        body: '{"secret":"shown once"}',
        headers: { "content-type": "application/json" },
        replayFromService: true,
      },
    ]);
    expect(await repo.idempotencyRecord(credential, "secret-1")).toMatchObject({ status: 201, response_body: "", replay_from_service: true });
  });

  it("when several keys are claimed in one statement, then each is answered in order: a key given twice is held by its first, a key in progress or answered is not taken", async () => {
    const credential = newId("key");
    const repo = gatewayRepo(db.sql);
    const claim = (key: string, fingerprint = "f") => ({ credentialId: credential, key, fingerprint });
    expect(await repo.claimIdempotencyKeys([claim("running"), claim("answered")], 60_000)).toEqual([true, true]);
    await repo.storeIdempotentOutcomes([{ credentialId: credential, key: "answered", status: 400, body: '{"title":"x"}', headers: {} }]);
    // Out of key order, with a twin: rows are written in key order, the twin is refused.
    expect(await repo.claimIdempotencyKeys([claim("zz-new"), claim("running"), claim("aa-new"), claim("zz-new"), claim("answered")], 60_000)).toEqual([
      true,
      false,
      true,
      false,
      false,
    ]);
    expect(await repo.idempotencyRecord(credential, "answered")).toMatchObject({ status: 400, response_body: '{"title":"x"}' });
  });

  it("when a lease ran out with no outcome, then the same request claims its key again in a batch, and another body does not", async () => {
    const credential = newId("key");
    const repo = gatewayRepo(db.sql);
    expect(await repo.claimIdempotencyKeys([{ credentialId: credential, key: "lapsed", fingerprint: "same" }], 1)).toEqual([true]);
    await new Promise((r) => setTimeout(r, 20));
    expect(
      await repo.claimIdempotencyKeys(
        [
          { credentialId: credential, key: "lapsed", fingerprint: "other" },
          { credentialId: credential, key: "fresh", fingerprint: "x" },
        ],
        60_000,
      ),
    ).toEqual([false, true]);
    expect(await repo.claimIdempotencyKeys([{ credentialId: credential, key: "lapsed", fingerprint: "same" }], 60_000)).toEqual([true]);
  });

  it("when several outcomes are stored in one statement, then each key holds its own, bodies with quotes, backslashes and braces intact", async () => {
    const credential = newId("key");
    const repo = gatewayRepo(db.sql);
    const keys = ["a", "b", "c"];
    await repo.claimIdempotencyKeys(
      keys.map((key) => ({ credentialId: credential, key, fingerprint: "f" })),
      60_000,
    );
    const body = (k: string) => JSON.stringify({ id: k, notes: 'a "quoted" \\ back\\slash, {braces}, commas and ünïcödé' });
    await repo.storeIdempotentOutcomes(
      keys.map((key, i) => ({
        credentialId: credential,
        key,
        status: 200 + i,
        body: body(key),
        headers: { etag: `"${i}"`, "content-type": "application/json" },
      })),
    );
    for (const [i, key] of keys.entries())
      expect(await repo.idempotencyRecord(credential, key)).toEqual({
        fingerprint: "f",
        status: 200 + i,
        response_body: body(key),
        response_headers: { etag: `"${i}"`, "content-type": "application/json" },
        replay_from_service: false,
      });
  });
});
