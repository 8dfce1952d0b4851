import { createDb } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { compactJson } from "../src/repo/task-json.js";

// compactJson() stands in for JSON.stringify(JSON.parse(text)) on what Postgres writes for a row
// holding jsonb values: this holds the two equal on Postgres' own output, for hand-picked values and
// random ones (strings full of quotes, backslashes, separators and spaces; numbers written any way).
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 2 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

/** Each JSON text as Postgres writes it inside a row (row_to_json around a jsonb column and a text one). */
async function asPostgresWrites(texts: string[]): Promise<string[]> {
  const rows = await db.sql<{ json: string }[]>`
    select (select row_to_json(j)::text from (select v.t::jsonb as value, 'a b, c: d' as note, 0.0000001::numeric as points) j) as json
    from unnest(${texts}::text[]) with ordinality as v(t, i) order by v.i`;
  return rows.map((r) => r.json);
}

const PICKED = [
  "{}",
  "[]",
  '{"a": 1, "b": [1, 2, {"c": "d"}]}',
  '{"n": 1.50, "m": 12.0, "tiny": 0.0000001, "tinier": 2.5e-10, "big": 1000000000000000000000, "long": 123456789012345678901}',
  '{"neg": -0.5, "zero": -0.0, "sum": 0.30000000000000004, "int": 123456789012345, "e": 12e3}',
  '{"s": "a, b: c", "q": "say \\"hi\\", ok", "bs": "ends with \\\\", "bsq": "\\\\\\"", "nl": "x\\ny\\tz\\u0001\\u001f"}',
  '{"u": "ünïcode 🚀 \\u2028 </script>", "k: ey, ": true, "f": false, "nil": null}',
  '[[[]], [{}], "", " ", "\\"", 0, -1, 1e-7]',
];

const ALPHABET = ['"', "\\", ":", ",", " ", "\n", "\t", "{", "}", "[", "]", "a", "ü", "🚀", "0", "1", ".", "e", "-"];

function randomString(): string {
  let s = "";
  for (let i = Math.floor(Math.random() * 12); i > 0; i--) s += ALPHABET[Math.floor(Math.random() * ALPHABET.length)];
  return JSON.stringify(s);
}

function randomNumber(): string {
  const digits = () => String(Math.floor(Math.random() * 10 ** (1 + Math.floor(Math.random() * 8))));
  const forms = [
    () => digits(),
    () => `-${digits()}.${digits()}`,
    () => `${digits()}.${digits()}000`,
    () => `0.000000${digits()}`,
    () => `${digits()}e${Math.floor(Math.random() * 30) - 15}`.replace(/^0+(?=\d)/, ""),
    () => `9${digits()}${digits()}${digits()}`,
  ];
  return forms[Math.floor(Math.random() * forms.length)]?.() ?? "0";
}

function randomValue(depth: number): string {
  const r = Math.random();
  if (depth > 3 || r < 0.35) return Math.random() < 0.5 ? randomString() : randomNumber();
  if (r < 0.45) return ["true", "false", "null"][Math.floor(Math.random() * 3)] ?? "null";
  const n = Math.floor(Math.random() * 4);
  if (r < 0.7) return `[${Array.from({ length: n }, () => randomValue(depth + 1)).join(",")}]`;
  // A key that reads as an integer ("0") is one JavaScript puts first in an object, wherever it was;
  // no key of a task's values can be one (a custom field's key starts with a letter).
  return `{${Array.from({ length: n }, () => `${randomString().replace(/^"(?=[0-9])/, '"k')}:${randomValue(depth + 1)}`).join(",")}}`;
}

describe("compactJson", () => {
  it("when Postgres writes a row holding jsonb values, then compactJson writes what JSON.stringify(JSON.parse()) writes, for picked and random values", async () => {
    const texts = [...PICKED, ...Array.from({ length: 2000 }, () => randomValue(0))];
    const written = await asPostgresWrites(texts);
    let changed = 0;
    for (const [i, pg] of written.entries()) {
      const compact = compactJson(pg);
      expect(compact, `value ${texts[i]} written as ${pg}`).toBe(JSON.stringify(JSON.parse(pg)));
      if (compact !== pg) changed++;
    }
    // Every row has a space in its jsonb or numeric that JavaScript writes otherwise.
    expect(changed).toBe(written.length);
  });

  it("when the text is already what JSON.stringify writes, then it comes back the same string", () => {
    const text = JSON.stringify({ a: "b, c: d", n: 1e-7, big: 1e21, arr: [1.5, -0.25, '\\"'] });
    expect(compactJson(text)).toBe(text);
  });
});
