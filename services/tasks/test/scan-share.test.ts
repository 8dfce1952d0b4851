import { actorOf, type Caller, ListTasksQuery, type RpcContext } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { tasksResources } from "../src/domain/resources.js";
import { tasksSystem } from "../src/domain/tasks.js";

// The tasks service runs as many lists of one organization at once as its share allows: the fair
// share of the replica's connections, or the organization's own when an operator set one (the
// gateway sends it as `scan_share`). The list's statement is held here until released, so the
// lists that reached it are counted while the others wait at the gate.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 10 });

afterAll(async () => {
  await db.end({ timeout: 1 });
});

function caller(scanShare?: number): Caller {
  const org = newId("org");
  const ctx: RpcContext = {
    request_id: `req_share_${Math.random()}`,
    organization_id: org,
    user_id: "usr_share_test",
    credential_id: "key_share_test",
    scopes: ["tasks:read"],
    plan: "team",
    ...(scanShare === undefined ? {} : { scan_share: scanShare }),
  };
  return { organizationId: org, userId: "usr_share_test", credentialId: "key_share_test", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
}

/** A replica whose list statements wait for `release`, counting how many run at once. */
function heldReplica() {
  const resources = tasksResources(db, { checkHits: () => false, changed: async () => undefined });
  let open!: () => void;
  const released = new Promise<void>((r) => {
    open = r;
  });
  const state = { running: 0, most: 0 };
  const page = resources.repos.search.page;
  const search = {
    ...resources.repos.search,
    page: async (...args: Parameters<typeof page>) => {
      state.running++;
      state.most = Math.max(state.most, state.running);
      await released;
      state.running--;
      return page(...args);
    },
  };
  const svc = tasksSystem({ ...resources, repos: { ...resources.repos, search } });
  return { svc, state, release: open };
}

async function mostAtOnce(scanShare: number | undefined, lists: number): Promise<number> {
  const r = heldReplica();
  const c = caller(scanShare);
  const q = ListTasksQuery.parse({ limit: 5 });
  const answers = Array.from({ length: lists }, () => r.svc.listTasks(c, q));
  // Every list that may start has reached the statement by the time a later turn runs.
  await new Promise((done) => setTimeout(done, 200));
  const most = r.state.most;
  r.release();
  const settled = await Promise.allSettled(answers);
  expect(settled.map((s) => s.status)).toEqual(Array(lists).fill("fulfilled"));
  return most;
}

describe("an organization's share of the tasks service's scans", () => {
  it("when no share was set, then one organization runs a quarter of the replica's connections' worth of lists at once", async () => {
    expect(await mostAtOnce(undefined, 6)).toBe(2);
  });

  it("when an operator set a share, then the organization runs that many at once, and never more than the connections", async () => {
    expect(await mostAtOnce(5, 8)).toBe(5);
    expect(await mostAtOnce(40, 14)).toBe(10);
  });
});
