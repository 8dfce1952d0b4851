import type { RpcContext } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { membersCache } from "../src/domain/members-cache.js";
import type { MembersPort } from "../src/domain/people.js";

const ctx = {} as RpcContext;

/** A keys service that knows `members` and records each question it is asked. */
function source(members: Set<string>) {
  const asked: string[][] = [];
  let hold: Promise<void> | undefined;
  const port: MembersPort = {
    async current(_ctx, _org, ids) {
      asked.push([...ids]);
      if (hold) await hold;
      return new Set(ids.filter((id) => members.has(id)));
    },
  };
  return { port, asked, holdNext: (p: Promise<void>) => (hold = p) };
}

describe("members cache", () => {
  it("when the same members are named again, then only the ones not confirmed yet are asked, and a refusal is always asked anew", async () => {
    const s = source(new Set(["ann", "bob"]));
    const c = membersCache(s.port, { ttlMs: 60_000 });
    expect([...(await c.port.current(ctx, "org", ["ann", "eve"]))]).toEqual(["ann"]);
    expect([...(await c.port.current(ctx, "org", ["ann", "bob", "eve"]))].sort()).toEqual(["ann", "bob"]);
    expect(await c.port.current(ctx, "org", ["ann", "bob"])).toEqual(new Set(["ann", "bob"]));
    expect(s.asked).toEqual([
      ["ann", "eve"],
      ["bob", "eve"],
    ]);
    // Another organization's membership is its own question.
    expect(await c.port.current(ctx, "other", ["ann"])).toEqual(new Set(["ann"]));
    expect(s.asked.at(-1)).toEqual(["ann"]);
  });

  it("when the organization's memberships change, then its members are asked again and other organizations' stay confirmed", async () => {
    const members = new Set(["ann"]);
    const s = source(members);
    const c = membersCache(s.port, { ttlMs: 60_000 });
    await c.port.current(ctx, "org", ["ann"]);
    await c.port.current(ctx, "other", ["ann"]);
    members.delete("ann");
    c.invalidate("org");
    expect(await c.port.current(ctx, "org", ["ann"])).toEqual(new Set());
    expect(await c.port.current(ctx, "other", ["ann"])).toEqual(new Set(["ann"]));
    expect(s.asked).toEqual([["ann"], ["ann"], ["ann"]]);
    c.clear();
    await c.port.current(ctx, "other", ["ann"]);
    expect(s.asked).toHaveLength(4);
  });

  it("when an invalidation arrives while a question is on its way, then its answer is used once and not kept", async () => {
    const s = source(new Set(["ann"]));
    const c = membersCache(s.port, { ttlMs: 60_000 });
    let release = () => {};
    s.holdNext(new Promise<void>((r) => (release = r)));
    const pending = c.port.current(ctx, "org", ["ann"]);
    c.invalidate("org");
    release();
    expect(await pending).toEqual(new Set(["ann"]));
    s.holdNext(Promise.resolve());
    await c.port.current(ctx, "org", ["ann"]);
    expect(s.asked).toHaveLength(2);
  });

  it("when a confirmation is older than the time to trust it, or the cache is off, then the member is asked again", async () => {
    const s = source(new Set(["ann"]));
    const off = membersCache(s.port, { ttlMs: 0 });
    await off.port.current(ctx, "org", ["ann"]);
    await off.port.current(ctx, "org", ["ann"]);
    expect(s.asked).toHaveLength(2);
    const short = membersCache(s.port, { ttlMs: 1 });
    await short.port.current(ctx, "org", ["ann"]);
    const until = Date.now() + 5;
    while (Date.now() < until) await new Promise((r) => setTimeout(r, 1));
    await short.port.current(ctx, "org", ["ann"]);
    expect(s.asked).toHaveLength(4);
  });

  it("when more users or bytes are confirmed than it keeps, then the oldest go first", async () => {
    const s = source(new Set(["u1", "u2", "u3"]));
    // Room for about two organizations of two users each: (1 + 64) + 2 × (2 + 64) = 197 bytes each.
    const c = membersCache(s.port, { ttlMs: 60_000, maxBytes: 400, maxUsersPerOrganization: 2 });
    await c.port.current(ctx, "a", ["u1", "u2", "u3"]); // u1 is dropped for u3
    await c.port.current(ctx, "b", ["u1", "u2"]);
    await c.port.current(ctx, "c", ["u1"]); // a is dropped for c
    s.asked.length = 0;
    await c.port.current(ctx, "b", ["u1"]);
    await c.port.current(ctx, "c", ["u1"]);
    expect(s.asked).toEqual([]);
    await c.port.current(ctx, "a", ["u2"]);
    expect(s.asked).toEqual([["u2"]]);
  });
});
