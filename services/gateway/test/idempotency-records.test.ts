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
    expect(await commitModeAfter((repo) => repo.claimIdempotencyKey(credential, "async-1", "fingerprint", 4_000))).toBe("off");
    expect(await commitModeAfter((repo) => repo.storeIdempotentOutcome(credential, "async-1", 201, '{"id":"x"}', { "content-type": "application/json" }))).toBe(
      "off",
    );
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
    expect(await repo.claimIdempotencyKey(credential, "secret-1", "fingerprint", 4_000)).toBe(true);
    await repo.storeIdempotentOutcome(credential, "secret-1", 201, '{"secret":"shown once"}', { "content-type": "application/json" }, true);
    expect(await repo.idempotencyRecord(credential, "secret-1")).toMatchObject({ status: 201, response_body: "", replay_from_service: true });
  });
});
