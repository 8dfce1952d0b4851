import { describe, expect, it } from "vitest";
import { type RawRecord, splitRecords } from "../src/domain/imports/records.js";

// How an import file is cut into lines (JSONL) and rows (CSV), at the unit level: the same bytes
// in any chunking give the same records, and a record past the bound costs that record only. The
// whole path through HTTP is test/e2e/imports-csv.test.ts and imports-jsonl.test.ts.

/** The text cut into chunks of `size` bytes, as a stream would hand it over. */
async function* chunks(text: string | Buffer, size: number): AsyncGenerator<Buffer> {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function split(text: string | Buffer, format: "csv" | "jsonl", size: number, max = 1000) {
  const out: Array<Omit<RawRecord, "bytes"> & { text: string | null }> = [];
  for await (const r of splitRecords(chunks(text, size), format, max)) {
    const { bytes, ...rest } = r;
    out.push({ ...rest, text: bytes === null ? null : bytes.toString("utf8") });
  }
  return out;
}

describe("splitting an import file into records", () => {
  it("when a JSONL file is read in chunks of any size, then the same lines with their ends in bytes, a CR before the LF dropped", async () => {
    const text = '{"a":1}\r\n{"b":"é"}\n\n{"c":3}';
    const expected = [
      { line: 1, end: 9, text: '{"a":1}' },
      { line: 2, end: 20, text: '{"b":"é"}' },
      { line: 3, end: 21, text: "" },
      { line: 4, end: 28, text: '{"c":3}' },
    ];
    for (const size of [1, 2, 3, 7, 100]) expect(await split(text, "jsonl", size)).toEqual(expected);
  });

  it("when a CSV row holds a quoted line break, comma or doubled quote, then it is one row; a byte order mark is not part of the first", async () => {
    const text = '\uFEFFtitle,notes\n"two\nlines","a, ""b"""\nplain,x\n';
    for (const size of [1, 4, 64]) {
      expect((await split(text, "csv", size)).map((r) => [r.line, r.text, r.malformed])).toEqual([
        [1, "title,notes", undefined],
        [2, '"two\nlines","a, ""b"""', undefined],
        [3, "plain,x", undefined],
      ]);
    }
  });

  it("when a CSV row's quoting is broken, then that row is marked and the next rows are read as usual", async () => {
    const text = 'a,"b"x\nc"d,e\nf,g\n"open,h';
    const rows = await split(text, "csv", 3);
    expect(rows.map((r) => [r.line, r.text, r.malformed === undefined ? "ok" : "malformed"])).toEqual([
      [1, 'a,"b"x', "malformed"],
      [2, 'c"d,e', "malformed"],
      [3, "f,g", "ok"],
      [4, '"open,h', "malformed"],
    ]);
  });

  it("when a record is longer than the bound, then it comes without its bytes and the reader goes on after the next line break", async () => {
    const long = "y".repeat(50);
    expect((await split(`short\n${long}\nafter\n`, "jsonl", 8, 20)).map((r) => [r.line, r.text])).toEqual([
      [1, "short"],
      [2, null],
      [3, "after"],
    ]);
    // A quote that never closes costs its row and what the bound covers, not the rest of the file.
    const rows = await split(`t\n"runaway ${long}\nnext,row\n`, "csv", 5, 20);
    expect(rows.map((r) => [r.line, r.text])).toEqual([
      [1, "t"],
      [2, null],
      [3, "next,row"],
    ]);
  });
});
