import { describe, expect, it } from "vitest";
import { keyBatches } from "../src/index.js";

/** A run that records each batch and answers when released. */
function gatedRun() {
  const batches: Array<{ key: string; items: number[] }> = [];
  const gates: Array<() => void> = [];
  const run = (key: string, items: readonly number[]) => {
    batches.push({ key, items: [...items] });
    return new Promise<number[]>((resolve) => gates.push(() => resolve(items.map((i) => i * 10))));
  };
  const release = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { batches, run, release };
}

describe("keyBatches", () => {
  it("when a call comes alone, then it runs at once, alone", async () => {
    const { batches, run, release } = gatedRun();
    const call = keyBatches(8, run);
    const a = call("org_a", 1);
    await release();
    expect(await a).toBe(10);
    expect(batches).toEqual([{ key: "org_a", items: [1] }]);
  });

  it("when calls for one key arrive while its batch runs, then they go together in the next, at most max at once, each with its own answer", async () => {
    const { batches, run, release } = gatedRun();
    const call = keyBatches(3, run);
    const first = call("org_a", 1);
    const later = [2, 3, 4, 5].map((i) => call("org_a", i));
    await release();
    await release();
    await release();
    expect(await Promise.all([first, ...later])).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([
      { key: "org_a", items: [1] },
      { key: "org_a", items: [2, 3, 4] },
      { key: "org_a", items: [5] },
    ]);
  });

  it("when two keys are called, then their batches run side by side, never mixed", async () => {
    const { batches, run, release } = gatedRun();
    const call = keyBatches(8, run);
    const a = call("org_a", 1);
    const b = call("org_b", 2);
    expect(batches).toEqual([
      { key: "org_a", items: [1] },
      { key: "org_b", items: [2] },
    ]);
    await release();
    await release();
    expect(await Promise.all([a, b])).toEqual([10, 20]);
  });

  it("when a batch fails, then each of its calls runs again alone, and only the one that fails alone fails", async () => {
    const seen: number[][] = [];
    let hold: (() => void) | undefined;
    const held = new Promise<void>((r) => {
      hold = r;
    });
    const call = keyBatches(8, async (_key, items: readonly number[]) => {
      seen.push([...items]);
      if (items.length === 1 && items[0] === 0) {
        await held;
        return [0];
      }
      if (items.includes(13)) throw new Error("13 is refused");
      return items.map((i) => i + 1);
    });
    const first = call("org_a", 0);
    const rest = [1, 13, 2].map((i) =>
      call("org_a", i).then(
        (v) => ({ ok: v }),
        (e: Error) => ({ err: e.message }),
      ),
    );
    hold?.();
    expect(await first).toBe(0);
    expect(await Promise.all(rest)).toEqual([{ ok: 2 }, { err: "13 is refused" }, { ok: 3 }]);
    expect(seen).toEqual([[0], [1, 13, 2], [1], [13], [2]]);
  });

  it("when a key's batches are done, then a later call starts a batch of its own at once", async () => {
    const { batches, run, release } = gatedRun();
    const call = keyBatches(8, run);
    const a = call("org_a", 1);
    await release();
    await a;
    const b = call("org_a", 2);
    await release();
    expect(await b).toBe(20);
    expect(batches).toEqual([
      { key: "org_a", items: [1] },
      { key: "org_a", items: [2] },
    ]);
  });
});
