import type { Task } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { taskBytes, taskCache } from "../src/domain/task-cache.js";

const task = (title: string) => ({ id: "T-1", title }) as Task;

describe("task cache", () => {
  it("when a read started before an invalidation finishes after it, then its copy is not kept", () => {
    const c = taskCache();
    const epoch = c.epoch();
    c.invalidate("org", [99]); // any change, even of another task, ends the read's epoch
    c.put("org", 1, task("old"), "v1", epoch);
    expect(c.get("org", 1)).toBeUndefined();
    c.put("org", 1, task("new"), "v1", c.epoch());
    expect(c.get("org", 1)?.task.title).toBe("new");
  });

  it("when a task changes, then its copy is dropped and other organizations' copies stay", () => {
    const c = taskCache();
    c.put("a", 1, task("a1"), "v1", c.epoch());
    c.put("b", 1, task("b1"), "v1", c.epoch());
    c.invalidate("a", [1]);
    expect(c.get("a", 1)).toBeUndefined();
    expect(c.get("b", 1)?.task.title).toBe("b1");
    c.clear();
    expect(c.get("b", 1)).toBeUndefined();
  });

  it("when full, then the oldest copy goes first; when expired, then a copy is not served", () => {
    let clock = 1_000;
    const c = taskCache({ maxEntries: 2, ttlMs: 30, now: () => clock });
    c.put("o", 1, task("1"), "v1", c.epoch());
    c.put("o", 2, task("2"), "v1", c.epoch());
    c.put("o", 3, task("3"), "v1", c.epoch());
    expect([c.get("o", 1), c.get("o", 2)?.task.title, c.get("o", 3)?.task.title]).toEqual([undefined, "2", "3"]);
    clock += 29;
    expect(c.get("o", 3)?.task.title).toBe("3");
    clock += 1;
    expect(c.get("o", 3)).toBeUndefined();
  });

  it("when a copy is put, then it keeps the row version it was built from; drop() forgets it without ending reads in flight", () => {
    const c = taskCache();
    const epoch = c.epoch();
    c.put("o", 1, task("one"), "v7", epoch);
    expect(c.get("o", 1)?.version).toBe("v7");
    c.drop("o", 1);
    expect(c.get("o", 1)).toBeUndefined();
    // A drop is not an invalidation: a read that started before it may still keep its copy.
    c.put("o", 2, task("two"), "v8", epoch);
    expect(c.get("o", 2)?.task.title).toBe("two");
  });

  it("when tasks with long notes fill the byte budget, then the oldest go first and the bytes held stay under it, whatever the entry count", () => {
    const big = (title: string) => ({ id: "T-1", title, notes: "n".repeat(100_000), description: null }) as unknown as Task;
    const one = taskBytes(big("t00"));
    const c = taskCache({ maxEntries: 20_000, maxBytes: one * 3 + 10 });
    for (let n = 1; n <= 50; n++) c.put("org", n, big(`t${String(n).padStart(2, "0")}`), "v1", c.epoch());
    expect(c.size).toBe(3);
    expect(c.bytes).toBeLessThanOrEqual(one * 3 + 10);
    expect(c.get("org", 47)).toBeUndefined();
    expect(c.get("org", 50)?.task.title).toBe("t50");
    // Dropping and invalidating give their bytes back.
    c.drop("org", 50);
    c.invalidate("org", [49]);
    expect(c.bytes).toBe(one);
    // A task larger than the whole budget is never kept.
    const tiny = taskCache({ maxBytes: 1000 });
    tiny.put("org", 1, big("huge"), "v1", tiny.epoch());
    expect(tiny.size).toBe(0);
    expect(tiny.bytes).toBe(0);
  });
});
