import dns from "node:dns";
import { describe, expect, it, vi } from "vitest";
import { lookupAll } from "../src/dns-cache.js";

const ask = (host: string, family = 0) =>
  new Promise<{ err: NodeJS.ErrnoException | null; addresses: dns.LookupAddress[] }>((resolve) =>
    lookupAll(host, family, (err, addresses) => resolve({ err, addresses })),
  );

describe("the shared name lookups of outbound calls", () => {
  it("when many ask for one name at once and again soon after, then the system resolver is asked once and everyone gets its answer", async () => {
    const spy = vi.spyOn(dns, "lookup");
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => ask("localhost")));
      const again = await ask("LOCALHOST");
      const calls = spy.mock.calls.filter((c) => String(c[0]).toLowerCase() === "localhost").length;
      expect(calls).toBe(1);
      for (const a of [...answers, again]) {
        expect(a.err).toBeNull();
        expect(a.addresses.map((x) => x.address)).toContain("127.0.0.1");
      }
      // Another family is another question.
      await ask("localhost", 4);
      expect(spy.mock.calls.filter((c) => String(c[0]).toLowerCase() === "localhost").length).toBe(2);
    } finally {
      spy.mockRestore();
    }
  });

  it("when a name does not exist, then every asker gets the resolver's error, not an empty answer", async () => {
    const { err, addresses } = await ask("no-such-name.invalid");
    expect(err?.code).toMatch(/ENOTFOUND|EAI_AGAIN/);
    expect(addresses).toEqual([]);
  });
});
