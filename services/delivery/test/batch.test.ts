import { describe, expect, it } from "vitest";
import { batcher } from "../src/batch.js";

describe("batcher", () => {
  it("when calls arrive together, then they go as one batch and each caller gets its own result", async () => {
    const batches: number[][] = [];
    const b = batcher(
      async (items: number[]) => {
        batches.push(items);
        return items.map((i) => i * 10);
      },
      { maxSize: 3, maxWaitMs: 5 },
    );
    const results = await Promise.all([1, 2, 3, 4].map((i) => b.add(i)));
    expect(results).toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it("when the batch call fails, then every caller of that batch gets the error", async () => {
    const b = batcher(async (_: number[]): Promise<number[]> => Promise.reject(new Error("down")), { maxSize: 10, maxWaitMs: 1 });
    const settled = await Promise.allSettled([b.add(1), b.add(2)]);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
  });

  it("when the batch answers fewer results than items, then the callers without one are rejected", async () => {
    const b = batcher(async (items: number[]) => items.slice(1), { maxSize: 10, maxWaitMs: 1 });
    const settled = await Promise.allSettled([b.add(1), b.add(2)]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected"]);
  });
});
