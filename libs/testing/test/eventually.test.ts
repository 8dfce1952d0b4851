import { describe, expect, it, vi } from "vitest";
import { eventually, rejectionOf } from "../src/index.js";

describe("eventually()", () => {
  it("when the check fails a few times and then passes, then it answers the check's value", async () => {
    let tries = 0;
    const value = await eventually(
      () => {
        tries++;
        expect(tries).toBeGreaterThanOrEqual(3);
        return { tries };
      },
      { intervalMs: 1 },
    );
    expect(value).toEqual({ tries: 3 });
  });

  it("when an async predicate answers false and then true, then it waits for true", async () => {
    let n = 0;
    expect(await eventually(async () => ++n === 4, { intervalMs: 1 })).toBe(true);
    expect(n).toBe(4);
  });

  it("when the check never passes, then it throws after the deadline, naming what it waited for and the last assertion's message", async () => {
    let tries = 0;
    const started = Date.now();
    const err = await rejectionOf(
      eventually(
        () => {
          tries++;
          expect(`${tries} rows`, "rows left").toBe("no rows");
        },
        { timeoutMs: 200, intervalMs: 20, what: "the outbox to drain" },
      ),
      Error,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(err).toBeInstanceOf(Error);
    const message = err.message;
    expect(message).toMatch(/^the outbox to drain did not hold within 200 ms \(\d+ tries\); last failure: rows left: expected '\d+ rows' to be 'no rows'/);
    // The last try is the last failure reported, and it fell on the deadline.
    expect(message).toContain(`expected '${tries} rows' to be 'no rows'`);
    expect(err.cause).toBeInstanceOf(Error);
  });

  it("when a predicate keeps answering false, then the timeout says so", async () => {
    const err = await rejectionOf(
      eventually(() => false, { timeoutMs: 50, intervalMs: 10 }),
      Error,
    );
    expect(err.message).toMatch(/^the condition did not hold within 50 ms \(\d+ tries\); last failure: the check answered false$/);
  });

  it("when given no options, then it keeps trying every 50 ms for 10 s before giving up", async () => {
    vi.useFakeTimers();
    try {
      let tries = 0;
      let settled = false;
      const outcome = rejectionOf(
        eventually(() => {
          tries++;
          return false;
        }),
        Error,
      ).finally(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(9_950);
      expect(settled).toBe(false);
      expect(tries).toBe(200);
      await vi.advanceTimersByTimeAsync(50);
      expect((await outcome).message).toContain("did not hold within 10000 ms (201 tries)");
    } finally {
      vi.useRealTimers();
    }
  });
});
