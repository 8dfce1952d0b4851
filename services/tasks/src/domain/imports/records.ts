/** One line of a JSONL file, or one row of a CSV file, as bytes. */
export interface RawRecord {
  /** From 1. */
  line: number;
  /** The file's bytes up to the end of this record, its line break included. */
  end: number;
  /** Without its line break; null when longer than the bound (its bytes were not kept). */
  bytes: Buffer | null;
  /** A CSV row whose quoting is broken: csv-parse would refuse it. */
  malformed?: string;
}

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const COMMA = 0x2c;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Where a CSV scan stands between two bytes. */
enum Csv {
  FieldStart,
  Unquoted,
  Quoted,
  /** A quote inside a quoted field: the field's end, or the first of two. */
  QuoteSeen,
}

interface Splitter {
  /** The index of the byte ending the record that `buf` continues, from `from`; -1 when it goes on past `buf`. */
  scan(buf: Buffer, from: number): number;
  /** Why the record just ended is malformed, if it is. */
  finish(): string | undefined;
  reset(): void;
}

function lines(): Splitter {
  return { scan: (buf, from) => buf.indexOf(LF, from), finish: () => undefined, reset: () => undefined };
}

/**
 * CSV rows as RFC 4180 has them: a line break inside quotes belongs to the field. Only the quoting
 * is followed here (every byte it looks at is ASCII, so UTF-8 text passes through); a row whose
 * quoting csv-parse would refuse is marked, so one bad row never takes the rows after it.
 */
function csvRows(): Splitter {
  let state = Csv.FieldStart;
  let problem: string | undefined;
  const flag = (why: string) => {
    problem ??= why;
  };
  return {
    scan(buf, from) {
      for (let i = from; i < buf.length; i++) {
        const b = buf[i];
        switch (state) {
          case Csv.FieldStart:
            if (b === QUOTE) state = Csv.Quoted;
            else if (b === LF) return i;
            else if (b !== COMMA) state = Csv.Unquoted;
            break;
          case Csv.Unquoted:
            if (b === COMMA) state = Csv.FieldStart;
            else if (b === LF) return i;
            else if (b === QUOTE) flag("a quote inside an unquoted field (quote the whole field and double the quote)");
            break;
          case Csv.Quoted:
            if (b === QUOTE) state = Csv.QuoteSeen;
            break;
          case Csv.QuoteSeen:
            if (b === QUOTE) state = Csv.Quoted;
            else if (b === COMMA) state = Csv.FieldStart;
            else if (b === LF) return i;
            else if (b !== CR) {
              flag("text after a closing quote (a quote inside a quoted field is written twice)");
              state = Csv.Unquoted;
            }
            break;
        }
      }
      return -1;
    },
    finish() {
      const why = state === Csv.Quoted ? "a quoted field is not closed before the end of the file" : problem;
      state = Csv.FieldStart;
      problem = undefined;
      return why;
    },
    reset() {
      state = Csv.FieldStart;
      problem = undefined;
    },
  };
}

/**
 * Splits a byte stream into records without holding more than one record (of at most `maxBytes`)
 * and the stream's current chunk. A record past the bound is given without its bytes and the
 * reader goes on after the next line break, whatever the quoting: one runaway quote costs that row
 * and the lines the bound covers, never the whole file.
 */
export async function* splitRecords(stream: AsyncIterable<Buffer | string>, format: "jsonl" | "csv", maxBytes: number): AsyncGenerator<RawRecord> {
  const s = format === "csv" ? csvRows() : lines();
  let parts: Buffer[] = [];
  let held = 0;
  let overflow = false;
  let line = 0;
  let offset = 0;
  const emit = (end: number): RawRecord => {
    line++;
    const why = s.finish();
    if (overflow) {
      overflow = false;
      s.reset();
      return { line, end, bytes: null };
    }
    // Always a copy: records are kept past the chunk they came in, whose buffer the stream may reuse.
    let bytes = Buffer.concat(parts, held);
    if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
    return why === undefined ? { line, end, bytes } : { line, end, bytes, malformed: why };
  };
  function* feed(buf: Buffer): Generator<RawRecord> {
    let from = 0;
    while (from < buf.length) {
      const stop = overflow ? buf.indexOf(LF, from) : s.scan(buf, from);
      const until = stop < 0 ? buf.length : stop;
      if (!overflow) {
        if (held + (until - from) > maxBytes) {
          overflow = true;
          parts = [];
          held = 0;
        } else if (until > from) {
          // Copied when the record goes on past this chunk: the stream may reuse its buffer.
          parts.push(stop < 0 ? Buffer.from(buf.subarray(from, until)) : buf.subarray(from, until));
          held += until - from;
        }
      }
      if (stop < 0) {
        offset += buf.length - from;
        return;
      }
      offset += stop + 1 - from;
      yield emit(offset);
      parts = [];
      held = 0;
      from = stop + 1;
    }
  }
  // A byte order mark is not part of the first line: the first bytes are held until it is known whether they are one.
  let head: Buffer | null = Buffer.alloc(0);
  for await (const chunk of stream) {
    let buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (head !== null) {
      buf = Buffer.concat([head, buf]);
      if (buf.length < BOM.length && BOM.subarray(0, buf.length).equals(buf)) {
        head = buf;
        continue;
      }
      head = null;
      if (buf.subarray(0, BOM.length).equals(BOM)) {
        buf = buf.subarray(BOM.length);
        offset += BOM.length;
      }
    }
    yield* feed(buf);
  }
  if (head !== null && head.length > 0) yield* feed(head);
  if (held > 0 || overflow) yield emit(offset);
}
