import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";
import { type Budgeted, pageOf, pageRows, withinBudget } from "../src/index.js";

// withinBudget() against real Postgres: a page stops adding items at its byte budget, always holds
// its first item, and Postgres sends at most one item past the budget.
const stack = inject("stack");
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
afterAll(() => sql.end({ timeout: 1 }));

/** Items a..d of 100, 200, 300 and 400 bytes, as a list's statement would select them. */
async function page(budget: number, limit: number, after = "") {
  const list = sql`
    select id, repeat('x', size) as body from (values ('a', 100), ('b', 200), ('c', 300), ('d', 400)) v(id, size)
    where id > ${after} order by id limit ${limit + 1}`;
  const rows = await sql<Array<{ id: string; body: string } & Budgeted>>`${withinBudget(sql, list, "octet_length(item.body)", "item.id", budget)}`;
  return { rows, ...pageRows(rows, limit) };
}

const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id);

describe("withinBudget()", () => {
  it("when the items outgrow the budget, then the page stops before the item that would pass it, and says more follow", async () => {
    const p = await page(350, 25);
    expect(ids(p.kept)).toEqual(["a", "b"]);
    expect(p.hasMore).toBe(true);
    // The first item past the budget is the only one sent beyond the page.
    expect(ids(p.rows)).toEqual(["a", "b", "c"]);
    expect(p.rows.map((r) => r.fits)).toEqual([true, true, false]);
  });

  it("when the items reach the budget exactly, then they all fit", async () => {
    expect(ids((await page(300, 25)).kept)).toEqual(["a", "b"]);
    expect(ids((await page(1000, 25)).kept)).toEqual(["a", "b", "c", "d"]);
    expect((await page(1000, 25)).hasMore).toBe(false);
  });

  it("when the first item alone is over the budget, then it is sent alone, with more to follow", async () => {
    const p = await page(50, 25, "a");
    expect(ids(p.kept)).toEqual(["b"]);
    expect(p.hasMore).toBe(true);
    expect(ids(p.rows)).toEqual(["b", "c"]);
  });

  it("when the limit comes before the budget, then the page stops at the limit", async () => {
    const p = await page(10_000, 2);
    expect(ids(p.kept)).toEqual(["a", "b"]);
    expect(p.hasMore).toBe(true);
  });

  it("when paged by the last item sent, then every item comes once, whatever the budget", async () => {
    for (const budget of [1, 150, 350, 700, 10_000]) {
      const seen: string[] = [];
      let after = "";
      for (let n = 0; n < 10; n++) {
        const p = await page(budget, 3, after);
        const out = pageOf(
          p.rows,
          3,
          (r) => r.id,
          (r) => [r.id],
        );
        seen.push(...out.data);
        if (!out.has_more) break;
        after = out.data.at(-1) ?? "";
      }
      expect(seen, `budget ${budget}`).toEqual(["a", "b", "c", "d"]);
    }
  });
});
