import { describe, expect, inject, it } from "vitest";
import { createDb } from "../src/index.js";

const stack = inject("stack");

describe("createDb", () => {
  it("when a pool is made, then it never pipelines queries onto busy connections and is bound to its schema", async () => {
    const sql = createDb({ url: stack.databaseUrl, schema: "tasks", max: 2 });
    try {
      expect((sql.options as unknown as { max_pipeline: number }).max_pipeline).toBe(1);
      // More concurrent queries than connections still all complete (they wait, not pipeline).
      const rows = await Promise.all(Array.from({ length: 20 }, (_, i) => sql<{ n: number; path: string }[]>`select ${i}::int as n, current_schema() as path`));
      expect(rows.map((r) => r[0]?.n)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(rows[0]?.[0]?.path).toBe("tasks");
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
