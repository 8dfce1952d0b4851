// The README's shell walkthrough as data: each command of its ```sh blocks, in order, with what
// the README says it answers (the `# …` lines right under it). `…` in what it shows stands for
// anything; the rest is a loose structural match: the keys and values shown must be there.

export type Pattern =
  | { kind: "any" }
  | { kind: "string"; raw: string; re: RegExp }
  | { kind: "literal"; value: number | boolean | null }
  | { kind: "object"; entries: Array<[string, Pattern]> }
  | { kind: "array"; items: Pattern[]; open: boolean };

export type Expectation =
  | { kind: "json"; pattern: Pattern }
  | { kind: "http"; status: number; headers: Array<[string, string]>; body?: Pattern }
  | { kind: "sse"; event?: string; id?: Pattern; data?: Pattern }
  | { kind: "line"; pattern: Pattern }
  | { kind: "receiver"; pattern: Pattern };

export interface Step {
  section: string;
  /** 1-based line of the command's first line in the README. */
  line: number;
  command: string;
  expect?: Expectation;
}

const ELLIPSIS = "…";

/** Whether a shell text ends inside a quote or with a line continuation. */
function unfinished(text: string): boolean {
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") quote = undefined;
    } else if (c === "\\") i++;
    else if (quote === '"') {
      if (c === '"') quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(text[i - 1] ?? ""))) {
      // A comment runs to the end of its line.
      const nl = text.indexOf("\n", i);
      if (nl < 0) break;
      i = nl;
    }
  }
  return quote !== undefined || /\\$/.test(text);
}

/** The first balanced {…} or […] in `text` (strings respected), and what follows it. */
function balanced(text: string): { json: string; rest: string } | undefined {
  const start = text.search(/[[{]/);
  if (start < 0) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return { json: text.slice(start, i + 1), rest: text.slice(i + 1) };
    }
  }
  return undefined;
}

export function stringPattern(raw: string): Pattern {
  if (raw === ELLIPSIS) return { kind: "any" };
  const re = new RegExp(
    `^${raw
      .split(ELLIPSIS)
      .map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
      .join(".*")}$`,
    "s",
  );
  return { kind: "string", raw, re };
}

/** Parses what the README shows: JSON in which `…` may stand for a value, a member, items or part of a string. */
export function parsePattern(text: string): Pattern {
  let i = 0;
  const ws = () => {
    while (/\s/.test(text[i] ?? "")) i++;
  };
  const fail = (what: string): never => {
    throw new Error(`README pattern: ${what} at ${i} in ${text}`);
  };
  const str = (): string => {
    let out = "";
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\\") {
        out += JSON.parse(`"${text.slice(i, i + 2)}"`) as string;
        i += 2;
      } else out += text[i++];
    }
    if (text[i++] !== '"') fail("unterminated string");
    return out;
  };
  const value = (): Pattern | "…" => {
    ws();
    const c = text[i];
    if (text.startsWith(ELLIPSIS, i)) {
      i += ELLIPSIS.length;
      return "…";
    }
    if (c === '"') return stringPattern(str());
    if (c === "{") {
      i++;
      const entries: Array<[string, Pattern]> = [];
      for (;;) {
        ws();
        if (text[i] === "}") break;
        if (text.startsWith(ELLIPSIS, i)) i += ELLIPSIS.length;
        else {
          if (text[i] !== '"') fail("expected a key");
          const key = str();
          ws();
          if (text[i++] !== ":") fail("expected :");
          const v = value();
          entries.push([key, v === "…" ? { kind: "any" } : v]);
        }
        ws();
        if (text[i] === ",") i++;
        else if (text[i] !== "}") fail("expected , or }");
      }
      i++;
      return { kind: "object", entries };
    }
    if (c === "[") {
      i++;
      const items: Pattern[] = [];
      let open = false;
      for (;;) {
        ws();
        if (text[i] === "]") break;
        const v = value();
        if (v === "…") open = true;
        else items.push(v);
        ws();
        if (text[i] === ",") i++;
        else if (text[i] !== "]") fail("expected , or ]");
      }
      i++;
      return { kind: "array", items, open };
    }
    const m = /^(-?\d+(?:\.\d+)?|true|false|null)/.exec(text.slice(i));
    if (!m?.[1]) return fail("unexpected text");
    i += m[1].length;
    return { kind: "literal", value: JSON.parse(m[1]) as number | boolean | null };
  };
  const v = value();
  return v === "…" ? { kind: "any" } : v;
}

/**
 * Matches `actual` against `p`; on success returns the placeholders the answer filled in (the
 * README's `"prj_…"` → the project id it answered), for later commands to use.
 */
export function match(
  p: Pattern,
  actual: unknown,
  path = "",
  bound = new Map<string, string>(),
): { ok: true; bound: Map<string, string> } | { ok: false; why: string } {
  const no = (why: string) => ({ ok: false as const, why: `${path || "/"}: ${why}` });
  switch (p.kind) {
    case "any":
      return { ok: true, bound };
    case "literal":
      return actual === p.value ? { ok: true, bound } : no(`expected ${JSON.stringify(p.value)}, got ${JSON.stringify(actual)}`);
    case "string":
      if (typeof actual !== "string" || !p.re.test(actual)) return no(`expected "${p.raw}", got ${JSON.stringify(actual)}`);
      if (p.raw.includes(ELLIPSIS)) bound.set(p.raw, actual);
      return { ok: true, bound };
    case "object": {
      if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return no(`expected an object, got ${JSON.stringify(actual)}`);
      for (const [k, v] of p.entries) {
        if (!(k in actual)) return no(`no "${k}" in ${JSON.stringify(actual).slice(0, 300)}`);
        const r = match(v, (actual as Record<string, unknown>)[k], `${path}/${k}`, bound);
        if (!r.ok) return r;
      }
      return { ok: true, bound };
    }
    case "array": {
      if (!Array.isArray(actual)) return no(`expected an array, got ${JSON.stringify(actual)}`);
      if (p.open ? actual.length < p.items.length : actual.length !== p.items.length)
        return no(`expected ${p.open ? "at least " : ""}${p.items.length} items, got ${actual.length}: ${JSON.stringify(actual).slice(0, 300)}`);
      for (const [n, item] of p.items.entries()) {
        const r = match(item, actual[n], `${path}/${n}`, bound);
        if (!r.ok) return r;
      }
      return { ok: true, bound };
    }
  }
}

/** What the comment lines right under a command say it answers, if they say. */
function expectation(comments: string[]): Expectation | undefined {
  const text = (from: number) => comments.slice(from).join("\n");
  for (const [n, c] of comments.entries()) {
    if (c.startsWith("{") || c.startsWith("[")) {
      const b = balanced(text(n));
      if (!b) throw new Error(`README: unbalanced JSON under a command: ${c}`);
      return { kind: "json", pattern: parsePattern(b.json) };
    }
    const http = /^HTTP\/[\d.]+ (\d{3})(.*)$/.exec(c);
    if (http) {
      const rest = http[2] ?? "";
      const b = balanced(rest);
      const head = b ? rest.slice(0, rest.indexOf(b.json)) : rest;
      const headers = [...head.matchAll(/([A-Za-z-]+): (\S+)/g)].map((m) => [m[1] ?? "", m[2] ?? ""] as [string, string]);
      return { kind: "http", status: Number(http[1]), headers, ...(b ? { body: parsePattern(b.json) } : {}) };
    }
    if (/^(id|event|data): /.test(c)) {
      const field = (name: string) => comments.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
      const id = field("id");
      const data = field("data");
      return { kind: "sse", event: field("event"), ...(id ? { id: stringPattern(id) } : {}), ...(data ? { data: parsePattern(data) } : {}) };
    }
    const printed = /^the receiver prints: (.*)$/.exec(c);
    if (printed) return { kind: "receiver", pattern: stringPattern(printed[1] ?? "") };
    if (/^listening on /.test(c)) return { kind: "line", pattern: stringPattern(c) };
  }
  return undefined;
}

/** Every command of the README's ```sh blocks, in order, with its section and what it should answer. */
export function readmeSteps(readme: string): Step[] {
  const lines = readme.split("\n");
  const steps: Step[] = [];
  let section = "";
  let inSh = false;
  let current: { line: number; text: string; comments: string[] } | undefined;
  const flush = () => {
    if (current) steps.push({ section, line: current.line, command: current.text, expect: expectation(current.comments) });
    current = undefined;
  };
  for (const [n, line] of lines.entries()) {
    if (!inSh) {
      if (line.startsWith("## ")) section = line.slice(3).trim();
      if (line.trim() === "```sh") inSh = true;
      continue;
    }
    if (current && unfinished(current.text)) {
      current.text += `\n${line}`;
      continue;
    }
    if (line.trim() === "```") {
      inSh = false;
      flush();
    } else if (line.trim() === "") flush();
    else if (line.trim().startsWith("#")) current?.comments.push(line.trim().replace(/^#\s?/, "").trim());
    else {
      flush();
      current = { line: n + 1, text: line, comments: [] };
    }
  }
  return steps;
}

/** Settings a command sets before its program (`A=1 B=2 make run`), and the program's words. */
export function assignments(command: string): { env: Record<string, string>; program: string } {
  const env: Record<string, string> = {};
  let rest = command.trim();
  for (let m = /^([A-Z_][A-Z0-9_]*)=(\S*)\s+/.exec(rest); m; m = /^([A-Z_][A-Z0-9_]*)=(\S*)\s+/.exec(rest)) {
    env[m[1] ?? ""] = m[2] ?? "";
    rest = rest.slice(m[0].length);
  }
  return { env, program: rest };
}
