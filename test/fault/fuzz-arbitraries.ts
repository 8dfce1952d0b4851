import { connect } from "node:net";
import fc from "fast-check";

/**
 * Request generators for the fuzz test (issue 9), built from the OpenAPI document the gateway
 * serves, plus a raw HTTP/1.1 client: fetch and node:http refuse to send most of what matters
 * here (control characters in headers, bad percent-encoding, conflicting framing, invalid UTF-8).
 *
 * A request is one operation of the document with exactly one slot mutated (a path parameter, a
 * query parameter, a header, a body field, the whole body, the framing or the method), or none.
 * Every request carries `slot` and `mutation` labels, so failures group by what broke them.
 */

// ---------------------------------------------------------------------------------------------
// The OpenAPI document

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
}

export interface Param {
  name: string;
  schema: JsonSchema;
  required: boolean;
}

export interface Operation {
  id: string;
  method: string;
  /** `/v1/tasks/{task_id}` */
  template: string;
  pathParams: Param[];
  query: Param[];
  idempotent: boolean;
  body?: JsonSchema;
  /** Documented success statuses and their application/json schemas. */
  successes: Record<string, unknown>;
  /** Documented success statuses answered as a Server-Sent Events stream instead of JSON. */
  streams: string[];
  /** A success's documented media types other than JSON (an HTML page, a file), by status. */
  otherMedia: Record<string, string[]>;
  /** Refusals documented as plain JSON rather than a problem (OAuth's own error shape), by status. */
  jsonErrors: Record<string, unknown>;
}

interface OpenApiOperation {
  operationId: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: JsonSchema }>;
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses?: Record<string, { content?: Record<string, { schema: unknown }> }>;
}

/** Every operation of the document, in document order. */
export function operationsOf(doc: unknown): Operation[] {
  const paths = (doc as { paths: Record<string, Record<string, OpenApiOperation>> }).paths;
  const out: Operation[] = [];
  for (const [template, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = op.parameters ?? [];
      const pick = (where: string) => params.filter((p) => p.in === where).map((p) => ({ name: p.name, schema: p.schema, required: p.required === true }));
      const body = op.requestBody?.content["application/json"]?.schema;
      out.push({
        id: op.operationId,
        method: method.toUpperCase(),
        template,
        pathParams: pick("path"),
        query: pick("query"),
        idempotent: params.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key"),
        successes: Object.fromEntries(
          Object.entries(op.responses ?? {})
            .filter(([status]) => status.startsWith("2"))
            .map(([status, r]) => [status, r.content?.["application/json"]?.schema]),
        ),
        streams: Object.entries(op.responses ?? {})
          .filter(([status, r]) => status.startsWith("2") && r.content?.["text/event-stream"] !== undefined)
          .map(([status]) => status),
        otherMedia: Object.fromEntries(
          Object.entries(op.responses ?? {})
            .filter(([status]) => status.startsWith("2"))
            .map(([status, r]) => [status, Object.keys(r.content ?? {}).filter((t) => t !== "application/json")]),
        ),
        jsonErrors: Object.fromEntries(
          Object.entries(op.responses ?? {})
            .filter(([status, r]) => /^[45]/.test(status) && r.content?.["application/json"] !== undefined)
            .map(([status, r]) => [status, r.content?.["application/json"]?.schema]),
        ),
        ...(body ? { body } : {}),
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Values, with raw JSON text where JSON.stringify cannot say it (invalid UTF-8, 1e999, deep
// nesting without building a deep object, duplicate keys)

export class Raw {
  constructor(readonly bytes: Buffer) {}
  static of(text: string, encoding: BufferEncoding = "utf8"): Raw {
    return new Raw(Buffer.from(text, encoding));
  }
}
export type Val = null | boolean | number | string | Raw | Val[] | { [k: string]: Val };

/** JSON text of a value; Raw parts go in byte for byte. */
export function serialize(v: Val): Buffer {
  const parts: Buffer[] = [];
  const walk = (x: Val): void => {
    if (x instanceof Raw) parts.push(x.bytes);
    else if (Array.isArray(x)) {
      parts.push(Buffer.from("["));
      x.forEach((e, i) => {
        if (i) parts.push(Buffer.from(","));
        walk(e);
      });
      parts.push(Buffer.from("]"));
    } else if (x !== null && typeof x === "object") {
      parts.push(Buffer.from("{"));
      Object.keys(x).forEach((k, i) => {
        if (i) parts.push(Buffer.from(","));
        parts.push(Buffer.from(`${JSON.stringify(k)}:`));
        walk(x[k] as Val);
      });
      parts.push(Buffer.from("}"));
    } else parts.push(Buffer.from(JSON.stringify(x)));
  };
  walk(v);
  return Buffer.concat(parts);
}

/** Sets an own property, `__proto__` included (a plain assignment would set the prototype). */
function setOwn(o: { [k: string]: Val }, k: string, v: Val): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** The ids of real resources of the fuzzing tenant, so valid requests reach the services. */
export interface Fixtures {
  organizationId: string;
  taskIds: string[];
  projectIds: string[];
  /** Projects for DELETE to remove, so the ones other requests name stay. */
  victimProjectIds: string[];
  /** Keys made for the fuzz: never the key the requests authenticate with. */
  keyIds: string[];
  entryIds: string[];
  /** Webhook endpoints (disabled, so nothing is sent) with FAILED deliveries that have attempts. */
  endpointIds: string[];
  /** Endpoints for DELETE to remove, so the ones other requests name stay. */
  victimEndpointIds: string[];
  deliveryIds: string[];
  /** A real next_cursor of each list operation that has a second page, by path template, issued for `?limit=1`. */
  cursors: Record<string, string>;
  /** Days the board accepts, YYYY-MM-DD. */
  days: string[];
}

// ---------------------------------------------------------------------------------------------
// The odd inputs

/** Odd dates by family; year 0000 is a valid-looking day Postgres has no room for. */
export const ODD_DATES = {
  "year-0000": ["0000-01-01", "0000-12-31", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00"],
  "year-limits": ["0001-01-01", "9999-12-31", "9999-12-31T23:59:59-23:59", "1969-12-31", "1970-01-01"],
  "year-expanded": ["+275760-09-13", "275760-09-13", "-000001-01-01", "-0001-01-01", "+275760-09-13T00:00:00Z"],
  "impossible-date": ["2026-02-30", "2026-02-29", "2024-02-29", "2026-13-01", "2026-00-10", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00+25:00"],
  "odd-date-format": ["2026-1-1", "20260101", "2026-01-01T00:00:00.123456789Z", "2026-03-29T02:30:00+01:00", " 2026-01-01", "2026-01-01\u0000", ""],
} as const;

/** Path segments as sent (already percent-encoded where meant). */
const BAD_IDS: ReadonlyArray<readonly [string, string]> = [
  ["pct-00", "%00"],
  ["pct-00", "a%00b"],
  ["pct-0a", "a%0Ab"],
  ["pct-0a", "%0A"],
  ["pct-crlf", "a%0D%0Ab"],
  ["pct-crlf", "%0D"],
  ["pct-zz", "%ZZ"],
  ["pct-zz", "a%"],
  ["pct-zz", "%G0"],
  ["pct-overlong", "%C0%AE"],
  ["pct-overlong", "%C0%AE%C0%AE"],
  ["pct-surrogate", "%ED%A0%80"],
  ["pct-invalid-utf8", "%FF"],
  ["pct-invalid-utf8", "%E2%82"],
  ["dotdot", ".."],
  ["dotdot", "%2e%2e"],
  ["dotdot", "%2E%2E%2F%2E%2E%2Fetc"],
  ["slash", "a%2Fb"],
  ["unicode", "%E2%80%AE"],
  ["unicode", "%F0%9F%98%80"],
  ["unicode", "%EF%BB%BF"],
  ["raw-utf8", Buffer.from("tâche", "utf8").toString("latin1")],
  ["space", "a%20b"],
  ["weird-id", "T-0"],
  ["weird-id", "T--1"],
  ["weird-id", "T-1.5"],
  ["weird-id", "T-1e3"],
  ["weird-id", "T-99999999999999"],
  ["weird-id", "T-999999999999"],
  ["weird-id", "0"],
  ["weird-id", "-1"],
  ["weird-id", "9007199254740993"],
  ["weird-id", "prj_00000000000000000000000000"],
  ["weird-id", "__proto__"],
  ["weird-id", "constructor"],
  ["weird-id", "null"],
  ["injection", "%27%20OR%201%3D1--"],
  ["injection", "%24(id)"],
];

// biome-ignore lint/suspicious/noTemplateCurlyInString: "${7*7}" is a template-injection probe, sent literally on purpose.
const INJECTIONS = ["' OR 1=1 --", "%s%n%x", "${7*7}", "<script>alert(1)</script>", "../../etc/passwd", "T-1; DROP TABLE tasks"];
const UNICODE_ODDITIES = ["\u202e", "\ufeff", "\u200b", "\uffff", "\ufffe", "😀", "e\u0301", "İ", "\u2028\u2029", "\u0085"];
const LONE_SURROGATES = ["\ud800", "a\udfffb", "\udc00\ud800", "x\ud83d"];
/** Byte sequences that are not UTF-8 (overlong, surrogate, truncated, out of range). */
const INVALID_UTF8 = [[0xc0, 0xae], [0xed, 0xa0, 0x80], [0xff], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xfe, 0xff]];
const SCALARS: ReadonlyArray<readonly [string, Val]> = [
  ["number", 0],
  ["number", -1],
  ["number", 1.5],
  ["boolean", true],
  ["null", null],
  ["array", []],
  ["object", {}],
  ["array", ["x"]],
  ["object", { a: "b" }],
  ["string", "x"],
];

/** Made once: the generators run for every request. */
const HUGE_WITHIN_LIMIT = "a".repeat(300_000);
const HUGE_PAST_LIMIT = "a".repeat(1_100_000);

const c = (code: number) => String.fromCharCode(code);
const c0 = fc.oneof(fc.integer({ min: 1, max: 31 }), fc.constant(127)).map(c);
const c1 = fc.integer({ min: 0x80, max: 0x9f }).map(c);

export interface Mutated<T> {
  v: T;
  m: string;
}
const tag = <T>(m: string, a: fc.Arbitrary<T>): fc.Arbitrary<Mutated<T>> => a.map((v) => ({ v, m }));
const tagged = <T>(m: string, ...vs: T[]): fc.Arbitrary<Mutated<T>> => tag(m, fc.constantFrom(...vs));
type Weighted<T> = { weight: number; arbitrary: fc.Arbitrary<T> };
const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>): Weighted<T> => ({ weight, arbitrary });

function typesOf(s: JsonSchema): string[] {
  if (s.anyOf || s.oneOf) return [...new Set((s.anyOf ?? s.oneOf ?? []).flatMap(typesOf))];
  if (s.enum) return ["enum"];
  if (Array.isArray(s.type)) return s.type;
  return s.type ? [s.type] : ["string"];
}
/** The first branch that has a given type (so limits of `string | null` are the string's). */
function branch(s: JsonSchema, type: string): JsonSchema {
  for (const b of s.anyOf ?? s.oneOf ?? []) {
    const found = typesOf(b).includes(type) ? branch(b, type) : undefined;
    if (found) return found;
  }
  return s;
}
/** zod's int() bound, not a real limit. */
const SAFE = 9007199254740991;

const isDateName = (name: string) => name === "date" || name.endsWith("_date");
const isIdName = (name: string) => name.endsWith("_id") || name.endsWith("_ids");

// ---------------------------------------------------------------------------------------------
// Valid values

export function validValue(s: JsonSchema, name: string, fx: Fixtures): fc.Arbitrary<Val> {
  switch (name) {
    case "task_id":
    case "blocker_task_id":
    case "parent_task_id":
      return fc.constantFrom(...fx.taskIds);
    case "project_id":
      return fc.constantFrom(...fx.projectIds);
    case "project_ids":
      return fc.subarray(fx.projectIds, { maxLength: 2 });
    case "key_id":
      return fc.constantFrom(...fx.keyIds);
    case "organization_id":
      return fc.constant(fx.organizationId);
    case "entry_id":
      return fc.constantFrom(...fx.entryIds);
    case "endpoint_id":
      return fc.constantFrom(...fx.endpointIds);
    case "delivery_id":
      return fc.constantFrom(...fx.deliveryIds);
    case "after":
      // A real cursor, though of another list or query than this request's, unless validParts puts it right.
      return fc.constantFrom(...Object.values(fx.cursors));
    case "recurrence":
      return fc.record(
        { frequency: fc.constantFrom("DAILY", "WEEKLY", "MONTHLY", "YEARLY"), interval: fc.integer({ min: 1, max: 3 }) },
        { requiredKeys: ["frequency"] },
      );
    case "timezone":
      return fc.constantFrom("UTC", "Europe/Paris", "America/New_York", "Asia/Kathmandu");
    case "date":
    case "end_date":
      return fc.constantFrom(...fx.days);
    case "due_date":
    case "start_date":
      return fc.oneof(
        fc.constantFrom(...fx.days),
        fc.constantFrom(...fx.days).map((d) => `${d}T09:30:00Z`),
      );
  }
  if (s.anyOf || s.oneOf) return fc.oneof(...(s.anyOf ?? s.oneOf ?? []).map((b) => validValue(b, name, fx)));
  if (s.enum) return fc.constantFrom(...(s.enum as Val[]));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return fc.integer({ min: Math.max(s.minimum ?? -1000, -1000), max: Math.min(s.maximum ?? 1000, 1000) });
    case "number":
      return fc.double({ min: s.minimum ?? -1000, max: s.maximum ?? 1000, noNaN: true, noDefaultInfinity: true });
    case "array": {
      const items = validValue(s.items ?? {}, name, fx);
      const min = s.minItems ?? 0;
      return fc.array(items, { minLength: min, maxLength: Math.max(min, Math.min(s.maxItems ?? 3, 3)) }) as fc.Arbitrary<Val>;
    }
    case "object":
      return validObject(s, fx);
    default:
      if (s.pattern) return fc.stringMatching(new RegExp(s.pattern));
      return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.max(s.minLength ?? 0, Math.min(s.maxLength ?? 30, 30)), unit: "grapheme-ascii" });
  }
}

function validObject(s: JsonSchema, fx: Fixtures): fc.Arbitrary<{ [k: string]: Val }> {
  const props = s.properties ?? {};
  const arbs: Record<string, fc.Arbitrary<Val>> = {};
  for (const [k, p] of Object.entries(props)) arbs[k] = validValue(p, k, fx);
  return (fc.record(arbs, { requiredKeys: s.required ?? [] }) as fc.Arbitrary<{ [k: string]: Val }>).map((o) => {
    // The one rule between fields a schema cannot say (POST /v1/tasks): project_id or project_ids.
    if ("project_id" in o && "project_ids" in o) delete o["project_ids"];
    return o;
  });
}

// ---------------------------------------------------------------------------------------------
// Mutated values (wrong types, limits, NUL, surrogates, control characters, odd dates, huge,
// deep, big arrays, extra properties)

function deep(levels: number, kind: "array" | "object"): Raw {
  return kind === "array" ? Raw.of("[".repeat(levels) + "]".repeat(levels)) : Raw.of('{"a":'.repeat(levels) + "1" + "}".repeat(levels));
}

function stringMutations(s: JsonSchema, name: string, huge: boolean): Array<Weighted<Mutated<Val>>> {
  const min = s.minLength ?? 0;
  const max = s.maxLength;
  const out: Array<Weighted<Mutated<Val>>> = [
    w(4, tag("nul", fc.constantFrom("\u0000", "a\u0000b", "T-1\u0000", "\u0000\u0000\u0000"))),
    w(4, tag("lone-surrogate", fc.constantFrom(...LONE_SURROGATES))),
    w(
      3,
      tag(
        "c0",
        c0.map((x) => `a${x}b`),
      ),
    ),
    w(3, tagged("crlf", "a\nb", "a\r\nb", "\r", "\n")),
    w(
      2,
      tag(
        "c1",
        c1.map((x) => `a${x}b`),
      ),
    ),
    w(2, tag("unicode", fc.constantFrom(...UNICODE_ODDITIES))),
    w(
      3,
      tag(
        "invalid-utf8",
        fc.constantFrom(...INVALID_UTF8).map((b) => new Raw(Buffer.concat([Buffer.from('"a'), Buffer.from(b), Buffer.from('b"')]))),
      ),
    ),
    w(1, tagged("bad-escape", Raw.of('"\\x41"'), Raw.of('"\\u12"'), Raw.of('"\\uZZZZ"'), Raw.of('"a\tb"'))),
    w(1, tag("injection", fc.constantFrom(...INJECTIONS))),
    w(1, tagged("blank", "", " ", "\t", "  a  ")),
    ...(isDateName(name)
      ? Object.entries(ODD_DATES).map(([m, vs]) => w(m === "year-0000" ? 6 : 3, tag(m, fc.constantFrom<string>(...vs))))
      : [w(1, fc.oneof(...Object.entries(ODD_DATES).map(([m, vs]) => tag(m, fc.constantFrom<string>(...vs)))))]),
  ];
  if (min > 0) out.push(w(2, tag("below-min", fc.constant("a".repeat(min - 1)))), w(1, tag("at-min", fc.constant("a".repeat(min)))));
  if (max !== undefined) {
    out.push(
      // Built in map(), only when drawn: some limits are 100,000 characters.
      w(
        2,
        tag(
          "at-max",
          fc.constant(max).map((n) => "a".repeat(n)),
        ),
      ),
      w(
        3,
        tag(
          "past-max",
          fc.constantFrom(max + 1, max * 4 + 7).map((n) => "a".repeat(n)),
        ),
      ),
      w(
        2,
        tag(
          "multibyte-at-max",
          fc.constantFrom("é", "😀", "\u0800").map((ch) => ch.repeat(ch.length === 2 ? Math.floor(max / 2) : max)),
        ),
      ),
      w(
        1,
        tag(
          "multibyte-past-max",
          fc.constant(max).map((n) => "😀".repeat(n)),
        ),
      ),
    );
  }
  if (isIdName(name)) out.push(w(3, tag("weird-id", fc.constantFrom(...BAD_IDS.map(([, v]) => decodeURIComponentSafe(v))))));
  if (huge) {
    out.push(w(1, tagged("huge-within-limit", HUGE_WITHIN_LIMIT)), w(1, tagged("huge-past-limit", HUGE_PAST_LIMIT)));
  }
  return out;
}

function decodeURIComponentSafe(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

function numberMutations(s: JsonSchema, integer: boolean): Array<Weighted<Mutated<Val>>> {
  const out: Array<Weighted<Mutated<Val>>> = [
    w(2, tagged("extreme", 1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), 1e-300)),
    w(
      2,
      tagged(
        "raw-number",
        Raw.of("1e999"),
        Raw.of("-1e999"),
        Raw.of("-0"),
        Raw.of("1.0"),
        Raw.of("1E2"),
        Raw.of("0.0000001"),
        Raw.of("123456789012345678901234567890"),
      ),
    ),
    w(1, tagged("invalid-number", Raw.of("01"), Raw.of("+1"), Raw.of(".5"), Raw.of("NaN"), Raw.of("Infinity"), Raw.of("0x1F"), Raw.of("1_000"))),
    w(2, tagged("numeric-string", "5", "1", "-1", "1e3", "NaN", "")),
  ];
  const lo = s.minimum !== undefined && Math.abs(s.minimum) < SAFE ? s.minimum : undefined;
  const hi = s.maximum !== undefined && Math.abs(s.maximum) < SAFE ? s.maximum : undefined;
  if (lo !== undefined) out.push(w(3, tagged("limits", lo - 1, lo, lo - 0.5)));
  if (hi !== undefined) out.push(w(3, tagged("limits", hi, hi + 1, hi + 0.5)));
  if (integer) out.push(w(2, tagged("fraction", 1.5, 0.1, (lo ?? 0) + 0.000001)));
  return out;
}

/** Another enum's values and case or space variants of this one's. */
function enumMutations(values: string[], allEnumValues: string[]): Array<Weighted<Mutated<Val>>> {
  const v = values.length ? values : ["x"];
  return [
    w(
      3,
      tag(
        "enum-variant",
        fc.constantFrom(...v).chain((x) => fc.constantFrom(x.toLowerCase(), `${x} `, ` ${x}`, `${x}\u0000`, x.normalize("NFKD") + "\u0301", `${x}${x}`)),
      ),
    ),
    w(2, tag("enum-other", fc.constantFrom(...allEnumValues.filter((x) => !v.includes(x)), "", "*"))),
  ];
}

export function mutatedValue(s: JsonSchema, name: string, fx: Fixtures, allEnumValues: string[], huge = true): fc.Arbitrary<Mutated<Val>> {
  const types = typesOf(s);
  const alts: Array<Weighted<Mutated<Val>>> = [
    w(
      3,
      tag("wrong-type", fc.constantFrom(...SCALARS.filter(([t]) => !types.includes(t) && !(t === "number" && types.includes("integer"))).map(([, v]) => v))),
    ),
    w(
      1,
      tag(
        "deep",
        fc.tuple(fc.constantFrom(1_000, 5_000, 20_000, 100_000), fc.constantFrom("array" as const, "object" as const)).map(([n, k]) => deep(n, k)),
      ),
    ),
  ];
  for (const t of types) {
    const b = branch(s, t);
    if (t === "string") alts.push(...stringMutations(b, name, huge));
    else if (t === "integer" || t === "number") alts.push(...numberMutations(b, t === "integer"));
    else if (t === "boolean") alts.push(w(2, tagged<Val>("boolean-like", "true", 1, 0, "false", "yes")));
    else if (t === "enum") alts.push(...enumMutations((b.enum ?? []).map(String), allEnumValues));
    else if (t === "array") alts.push(...arrayMutations(b, name, fx, allEnumValues));
    else if (t === "object") alts.push(...objectMutations(b, fx, allEnumValues));
  }
  return fc.oneof(...alts);
}

function arrayMutations(s: JsonSchema, name: string, fx: Fixtures, allEnumValues: string[]): Array<Weighted<Mutated<Val>>> {
  const item = validValue(s.items ?? {}, name === "project_ids" ? "project_id" : name, fx);
  const max = s.maxItems;
  const out: Array<Weighted<Mutated<Val>>> = [
    w(1, tag("empty-array", fc.constant([]))),
    w(
      2,
      tag(
        "big-array",
        fc.constantFrom(10_000, 100_000).chain((n) => item.map((x) => Array.from({ length: n }, () => x))),
      ),
    ),
    w(
      3,
      tag(
        "array-item",
        mutatedValue(s.items ?? {}, name, fx, allEnumValues, false).map((m) => [m.v]),
      ),
    ),
    w(
      1,
      tag(
        "duplicates",
        item.map((x) => Array.from({ length: 50 }, () => x)),
      ),
    ),
    w(1, tag("nested-array", fc.constant([[["x"]]]))),
  ];
  if (max !== undefined)
    out.push(
      w(
        2,
        tag(
          "past-max-items",
          item.map((x) => Array.from({ length: max + 1 }, () => x)),
        ),
      ),
      w(
        1,
        tag(
          "at-max-items",
          item.map((x) => Array.from({ length: max }, () => x)),
        ),
      ),
    );
  return out;
}

function objectMutations(s: JsonSchema, fx: Fixtures, allEnumValues: string[]): Array<Weighted<Mutated<Val>>> {
  const valid = validObject(s, fx);
  const out: Array<Weighted<Mutated<Val>>> = [
    w(
      2,
      tag(
        "extra-property",
        fc.tuple(valid, fc.constantFrom("extra", "__proto__", "constructor", "prototype", "", "a\u0000b", "😀", "\ud800")).map(([o, k]) => {
          setOwn(o, k, k === "constructor" ? { prototype: { polluted: true } } : { polluted: true });
          return o;
        }),
      ),
    ),
  ];
  const required = s.required ?? [];
  if (required.length)
    out.push(
      w(
        1,
        tag(
          "missing-required",
          fc.tuple(valid, fc.constantFrom(...required)).map(([o, k]) => {
            delete o[k];
            return o;
          }),
        ),
      ),
    );
  const props = Object.entries(s.properties ?? {});
  if (props.length) {
    out.push(
      w(
        3,
        tag(
          "nested-field",
          fc.tuple(valid, fc.constantFrom(...props)).chain(([o, [k, p]]) =>
            mutatedValue(p, k, fx, allEnumValues, false).map((m) => {
              setOwn(o, k, m.v);
              return o;
            }),
          ),
        ),
      ),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Requests

export type Framing = "length" | "chunked" | "cl-te" | "double-cl" | "bad-chunk" | "cl-negative" | "cl-garbage";

export interface FuzzRequest {
  op: string;
  /** Where the mutation is: valid, path.<name>, query.<name>, header.<name>, body/<field>, body, framing, method. */
  slot: string;
  mutation: string;
  method: string;
  /** The request-target as sent (latin1: one char per byte). */
  target: string;
  /** Extra header lines, latin1 (one char per byte); the Authorization of the owner is added at send time. */
  headers: Array<[string, string]>;
  /** Sent without Authorization (an anonymous caller). */
  anonymous: boolean;
  /** Whether Authorization comes from `headers` (a mutated one) instead of the owner's key. */
  customAuth: boolean;
  body?: Buffer;
  framing: Framing;
  version: string;
  omitHost: boolean;
}

const JSON_CT: [string, string] = ["Content-Type", "application/json"];
/** Percent-encoding that does not throw on a lone surrogate: it is written as its WTF-8 bytes (%ED%A0%80). */
function enc(v: string): string {
  return v.replace(/[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g, (ch) => {
    const cp = ch.charCodeAt(0);
    if (ch.length === 1 && cp >= 0xd800 && cp <= 0xdfff) {
      return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    }
    return encodeURIComponent(ch);
  });
}
const toQueryValue = (v: Val): string => (typeof v === "string" ? v : v instanceof Raw ? v.bytes.toString("utf8") : JSON.stringify(v));
/** UTF-8 text as latin1 chars, i.e. its bytes, for header values and targets. */
const utf8Bytes = (s: string) => Buffer.from(s, "utf8").toString("latin1");

interface Parts {
  method: string;
  pathValues: Record<string, string>;
  query: Array<[string, string]>;
  headers: Array<[string, string]>;
  body?: Buffer;
}

function buildTarget(op: Operation, p: Parts): string {
  const path = op.template.replace(/\{([a-z_]+)\}/g, (_, n: string) => p.pathValues[n] ?? "x");
  return p.query.length ? `${path}?${p.query.map(([k, v]) => (v === "\u0000flag" ? k : `${k}=${v}`)).join("&")}` : path;
}

/** A request for `op` with no mutation: real ids, valid query, a valid body. */
function validParts(op: Operation, fixtures: Fixtures): fc.Arbitrary<Parts> {
  const fx = op.method === "DELETE" ? { ...fixtures, projectIds: fixtures.victimProjectIds, endpointIds: fixtures.victimEndpointIds } : fixtures;
  const pathArb = fc.record(
    Object.fromEntries(op.pathParams.map((p) => [p.name, validValue(p.schema, p.name, fx).map((v) => enc(String(v)))])) as Record<string, fc.Arbitrary<string>>,
  );
  const cursor = op.query.some((q) => q.name === "after") ? fx.cursors[op.template] : undefined;
  const queryArb = fc.tuple(
    ...op.query
      .filter((q) => q.name !== "after")
      .map((q) =>
        q.required
          ? validValue(q.schema, q.name, fx).map((v) => [[q.name, enc(toQueryValue(v))]])
          : fc.option(validValue(q.schema, q.name, fx), { freq: 2 }).map((v) => (v === null ? [] : [[q.name, enc(toQueryValue(v))]])),
      ),
  ) as fc.Arbitrary<Array<Array<[string, string]>>>;
  const idemArb = op.idempotent ? fc.option(fc.stringMatching(/^[\x21-\x7E]{8,40}$/), { freq: 2 }) : fc.constant(null);
  const bodyArb = op.body ? validObject(op.body, fx).map((b) => serialize(b)) : fc.constant(undefined);
  // A second page: the cursor only holds with the limit and filters it was issued for.
  const pageArb = cursor ? fc.boolean() : fc.constant(false);
  return fc.record({ path: pathArb, query: queryArb, idem: idemArb, body: bodyArb, page: pageArb }).map(({ path, query, idem, body, page }) => ({
    method: op.method,
    pathValues: path,
    query:
      page && cursor
        ? [
            ["limit", "1"],
            ["after", enc(cursor)],
          ]
        : query.flat(),
    headers: [...(body ? [JSON_CT] : []), ...(idem === null ? [] : ([["Idempotency-Key", idem]] as Array<[string, string]>))],
    ...(body ? { body } : {}),
  }));
}

interface Mutation {
  slot: string;
  m: string;
  apply: (p: Parts) => Partial<FuzzRequest> & { parts?: Parts };
}

/** Replaces a header (case-insensitively), or drops it with value undefined. */
function withHeader(headers: Array<[string, string]>, name: string, value: string | undefined): Array<[string, string]> {
  const rest = headers.filter(([k]) => k.toLowerCase() !== name.toLowerCase());
  return value === undefined ? rest : [...rest, [name, value]];
}

function pathMutation(op: Operation): fc.Arbitrary<Mutation> | undefined {
  if (!op.pathParams.length) return undefined;
  const bad = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...BAD_IDS).map(([m, v]) => ({ m, v })) },
    { weight: 3, arbitrary: fc.constantFrom(101, 1_000, 5_000, 20_000).map((n) => ({ m: `long-${n}`, v: "T-" + "9".repeat(n) })) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 31 }).map((x) => ({ m: "pct-c0", v: `a%${x.toString(16).padStart(2, "0").toUpperCase()}b` })) },
    { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0x9f }).map((x) => ({ m: "pct-c1", v: `a%C2%${x.toString(16).toUpperCase()}b` })) },
  );
  return fc.tuple(fc.constantFrom(...op.pathParams), bad).map(([p, { m, v }]) => ({
    slot: `path.${p.name}`,
    m,
    apply: (parts) => ({ parts: { ...parts, pathValues: { ...parts.pathValues, [p.name]: v } } }),
  }));
}

function queryMutation(op: Operation, fx: Fixtures, allEnumValues: string[]): fc.Arbitrary<Mutation> {
  const onParam = op.query.length
    ? fc.constantFrom(...op.query).chain((q) =>
        fc.oneof(
          {
            weight: 6,
            arbitrary: mutatedValue(q.schema, q.name, fx, allEnumValues, false).map((mv) => ({
              m: mv.m,
              pairs: [[q.name, enc(toQueryValue(mv.v))]] as Array<[string, string]>,
              q: q.name,
            })),
          },
          {
            weight: 3,
            arbitrary: fc
              .constantFrom<[string, string]>(
                ["pct-00", "a%00b"],
                ["pct-0a", "a%0Ab"],
                ["pct-zz", "%ZZ"],
                ["pct-overlong", "%C0%AE"],
                ["pct-surrogate", "%ED%A0%80"],
                ["plus", "a+b"],
                ["raw-utf8", utf8Bytes("é")],
              )
              .map(([m, v]) => ({ m, pairs: [[q.name, v]] as Array<[string, string]>, q: q.name })),
          },
          {
            weight: 4,
            arbitrary: validValue(q.schema, q.name, fx).chain((v) =>
              fc
                .constantFrom<[string, Array<[string, string]>]>(
                  [
                    "repeated",
                    [
                      [q.name, enc(toQueryValue(v))],
                      [q.name, enc(toQueryValue(v))],
                    ],
                  ],
                  ["bracket-array", [[`${q.name}[]`, enc(toQueryValue(v))]]],
                  ["bracket-object", [[`${q.name}[a]`, enc(toQueryValue(v))]]],
                  ["empty-value", [[q.name, ""]]],
                  ["flag", [[q.name, "\u0000flag"]]],
                )
                .map(([m, pairs]) => ({ m, pairs, q: q.name })),
            ),
          },
        ),
      )
    : undefined;
  const general = fc
    .constantFrom<[string, Array<[string, string]>]>(
      ["unknown-param", [["foo", "bar"]]],
      [
        "proto-param",
        [
          ["__proto__", "x"],
          ["constructor", "x"],
          ["toString", "x"],
          ["hasOwnProperty", "x"],
        ],
      ],
      ["long-query", [["x", "a".repeat(10_000)]]],
      ["huge-query", [["x", "a".repeat(20_000)]]],
      ["many-params", Array.from({ length: 1_000 }, (_, i): [string, string] => [`p${i}`, "1"])],
      ["semicolon", [["limit", "1;x=2"]]],
    )
    .map(([m, pairs]) => ({ m, pairs, q: "" }));
  const arb = onParam ? fc.oneof({ weight: 4, arbitrary: onParam }, { weight: 1, arbitrary: general }) : general;
  return arb.map(({ m, pairs, q }) => ({
    slot: q ? `query.${q}` : "query",
    m,
    apply: (parts) => ({ parts: { ...parts, query: [...parts.query.filter(([k]) => k !== q), ...pairs] } }),
  }));
}

function headerMutation(op: Operation, ownerKeyLength: number): fc.Arbitrary<Mutation> {
  const idem = fc
    .constantFrom<[string, string]>(
      ["1kb", "k".repeat(1024)],
      ["past-max", "k".repeat(256)],
      ["at-max", "k".repeat(255)],
      ["empty", ""],
      ["tab", "a\tb"],
      ["space", "a b"],
      ["obs-text", "a\xe9b"],
      ["utf8", utf8Bytes("clé-😀")],
      ["del", "a\x7fb"],
      ["crlf", "a\r\nb"],
      ["nul", "a\x00b"],
    )
    .map(
      ([m, v]): Mutation => ({ slot: "header.idempotency-key", m, apply: (p) => ({ parts: { ...p, headers: withHeader(p.headers, "Idempotency-Key", v) } }) }),
    );
  const idemC0 = fc.integer({ min: 1, max: 31 }).map(
    (x): Mutation => ({
      slot: "header.idempotency-key",
      m: "c0",
      apply: (p) => ({ parts: { ...p, headers: withHeader(p.headers, "Idempotency-Key", `a${c(x)}b`) } }),
    }),
  );
  const idemTwice: fc.Arbitrary<Mutation> = fc.constant({
    slot: "header.idempotency-key",
    m: "repeated",
    apply: (p) => ({ parts: { ...p, headers: [...withHeader(p.headers, "Idempotency-Key", "first-key"), ["Idempotency-Key", "second-key"]] } }),
  });
  const ct = fc
    .constantFrom<[string, string | undefined]>(
      ["text-plain", "text/plain"],
      ["utf16", "application/json; charset=utf-16"],
      ["latin1", "application/json; charset=latin1"],
      ["uppercase", "APPLICATION/JSON"],
      ["double-semicolon", "application/json;;"],
      ["list", "application/json, text/plain"],
      ["form", "application/x-www-form-urlencoded"],
      ["multipart", "multipart/form-data; boundary=x"],
      ["problem-json", "application/problem+json"],
      ["merge-patch", "application/merge-patch+json"],
      ["empty", ""],
      ["star", "*/*"],
      ["jsonx", "application/jsonx"],
      ["quoted-charset", 'application/json; charset="utf-8"'],
      ["huge", `application/json; x=${"a".repeat(8_000)}`],
      ["missing", undefined],
    )
    .map(([m, v]): Mutation => ({ slot: "header.content-type", m, apply: (p) => ({ parts: { ...p, headers: withHeader(p.headers, "Content-Type", v) } }) }));
  const auth = fc
    .constantFrom<[string, string[]]>(
      ["huge-20kb", [`Bearer ${"a".repeat(20_000)}`]],
      ["big-8kb", [`Bearer ${"a".repeat(8_000)}`]],
      ["scheme-only", ["Bearer"]],
      ["empty-token", ["Bearer  "]],
      ["basic", ["Basic dXNlcjpwYXNz"]],
      ["garbage-key", [`Bearer svc_live_${"x".repeat(ownerKeyLength)}`]],
      ["jwt-garbage", ["Bearer a.b.c"]],
      ["jwt-alg-none", ["Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4Iiwib3JnX2lkIjoieCIsInNjb3BlIjoidGFza3M6cmVhZCJ9."]],
      ["obs-text", ["Bearer svc_live_\xe9\xe9"]],
      ["two-headers", ["Bearer a", "Bearer b"]],
      ["nul", ["Bearer a\x00b"]],
    )
    .map(
      ([m, vs]): Mutation => ({
        slot: "header.authorization",
        m,
        apply: (p) => ({ customAuth: true, parts: { ...p, headers: [...p.headers, ...vs.map((v): [string, string] => ["Authorization", v])] } }),
      }),
    );
  const misc = fc
    .constantFrom<[string, Array<[string, string]>, boolean]>(
      ["expect-100", [["Expect", "100-continue"]], false],
      ["expect-odd", [["Expect", "200-ok"]], false],
      ["missing-host", [], true],
      ["many-headers", Array.from({ length: 300 }, (_, i): [string, string] => [`X-F-${i}`, "1"]), false],
      ["big-header", [["X-Big", "a".repeat(8_000)]], false],
      ["huge-header", [["X-Big", "a".repeat(20_000)]], false],
      ["space-in-name", [["X Bad", "1"]], false],
      ["obs-fold", [["X-Fold", "a\r\n b"]], false],
      ["nul-in-value", [["X-Nul", "a\x00b"]], false],
      ["request-id-spoof", [["X-Request-Id", "spoofed\x7f"]], false],
      ["accept-xml", [["Accept", "application/xml"]], false],
      ["content-encoding", [["Content-Encoding", "gzip"]], false],
      ["forwarded", [["X-Forwarded-For", "1.1.1.1, , ::1, garbage"]], false],
    )
    .map(([m, extra, omitHost]): Mutation => ({ slot: "header", m, apply: (p) => ({ omitHost, parts: { ...p, headers: [...p.headers, ...extra] } }) }));
  return fc.oneof(
    {
      weight: op.idempotent ? 4 : 1,
      arbitrary: fc.oneof({ weight: 5, arbitrary: idem }, { weight: 2, arbitrary: idemC0 }, { weight: 1, arbitrary: idemTwice }),
    },
    { weight: op.body ? 3 : 1, arbitrary: ct },
    { weight: 3, arbitrary: auth },
    { weight: 3, arbitrary: misc },
  );
}

function framingMutation(op: Operation, port: number): fc.Arbitrary<Mutation> {
  const framings = fc.constantFrom<Framing>("chunked", "cl-te", "double-cl", "bad-chunk", "cl-negative", "cl-garbage").map(
    (f): Mutation => ({
      slot: "framing",
      m: f,
      apply: (p) => ({
        framing: f,
        parts: { ...p, body: p.body ?? Buffer.from("{}"), headers: p.body ? p.headers : withHeader(p.headers, "Content-Type", "application/json") },
      }),
    }),
  );
  const line = fc
    .constantFrom<[string, (p: Parts, target: string) => Partial<FuzzRequest>]>(
      ["http10", () => ({ version: "HTTP/1.0" })],
      ["http2-version", () => ({ version: "HTTP/2.0" })],
      ["bad-version", () => ({ version: "HTTP/1.1x" })],
      ["absolute-form", (_, t) => ({ target: `http://127.0.0.1:${port}${t}` })],
      ["asterisk", () => ({ target: "*" })],
      ["no-leading-slash", (_, t) => ({ target: t.slice(1) })],
      ["double-slash", (_, t) => ({ target: `/${t}` })],
      ["trailing-slash", (_, t) => ({ target: t.includes("?") ? t.replace("?", "/?") : `${t}/` })],
      ["uppercase-path", (_, t) => ({ target: t.toUpperCase() })],
      ["fragment", (_, t) => ({ target: `${t}#frag` })],
      ["raw-space", (_, t) => ({ target: `${t}%20x y` })],
    )
    .map(([m, f]): Mutation => ({ slot: "framing", m, apply: (p) => f(p, buildTarget(op, p)) }));
  return fc.oneof({ weight: 3, arbitrary: framings }, { weight: 2, arbitrary: line });
}

function methodMutation(op: Operation): fc.Arbitrary<Mutation> {
  return fc
    .constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS", "HEAD", "PROPFIND", "TRACE", "get", "FOO")
    .filter((m) => m !== op.method)
    .map((method): Mutation => ({ slot: "method", m: method, apply: (p) => ({ parts: { ...p, method } }) }));
}

/** Leaves of a body schema a mutation can target: top-level properties, and one level into objects. */
function bodySlots(s: JsonSchema): Array<{ path: string[]; schema: JsonSchema }> {
  const out: Array<{ path: string[]; schema: JsonSchema }> = [];
  for (const [k, p] of Object.entries(s.properties ?? {})) {
    out.push({ path: [k], schema: p });
    const obj = typesOf(p).includes("object") ? branch(p, "object") : undefined;
    for (const [k2, p2] of Object.entries(obj?.properties ?? {})) out.push({ path: [k, k2], schema: p2 });
  }
  return out;
}

function bodyFieldMutation(op: Operation, fx: Fixtures, allEnumValues: string[]): fc.Arbitrary<Mutation> | undefined {
  const body = op.body;
  if (!body) return undefined;
  const slots = bodySlots(body);
  if (!slots.length) return undefined;
  // Top-level fields first: nested ones (recurrence.*) are mostly enums and numbers.
  return fc.oneof(...slots.map((slot) => ({ weight: slot.path.length === 1 ? 3 : 1, arbitrary: fc.constant(slot) }))).chain(({ path, schema }) => {
    const name = path[path.length - 1] ?? "";
    const parentSchema = path.length > 1 ? branch(body.properties?.[path[0] ?? ""] ?? {}, "object") : undefined;
    return fc
      .tuple(validObject(body, fx), parentSchema ? validObject(parentSchema, fx) : fc.constant(undefined), mutatedValue(schema, name, fx, allEnumValues))
      .map(
        ([obj, parent, mv]): Mutation => ({
          slot: `body/${path.join("/")}`,
          m: mv.m,
          apply: (p) => {
            if (parent && path[0] !== undefined) {
              setOwn(parent, name, mv.v);
              setOwn(obj, path[0], parent);
            } else setOwn(obj, name, mv.v);
            return { parts: { ...p, body: serialize(obj), headers: withHeader(p.headers, "Content-Type", "application/json") } };
          },
        }),
      );
  });
}

function wholeBodyMutation(op: Operation, fx: Fixtures): fc.Arbitrary<Mutation> {
  const base = op.body ? validObject(op.body, fx) : fc.constant({} as { [k: string]: Val });
  const bodies = base.chain((obj) => {
    const text = serialize(obj).toString("utf8");
    return fc.constantFrom<[string, () => Buffer]>(
      ["not-json", () => Buffer.from("hello")],
      ["empty", () => Buffer.alloc(0)],
      ["array-top", () => Buffer.from("[]")],
      ["scalar-top", () => Buffer.from("1")],
      ["null-top", () => Buffer.from("null")],
      ["string-top", () => Buffer.from('"x"')],
      ["truncated", () => Buffer.from(text.slice(0, Math.max(1, text.length - 1)))],
      ["trailing-garbage", () => Buffer.from(`${text}x`)],
      ["bom", () => Buffer.from(`\ufeff${text}`)],
      ["duplicate-keys", () => Buffer.from(text.replace(/^\{/, '{"title":"a","name":"a","title":"b","name":"b",').replace(/,}$/, "}"))],
      ["proto", () => Buffer.from(text.replace(/^\{/, '{"__proto__":{"polluted":true},').replace(/,}$/, "}"))],
      ["constructor-prototype", () => Buffer.from(text.replace(/^\{/, '{"constructor":{"prototype":{"polluted":true}},').replace(/,}$/, "}"))],
      ["deep-1000", () => deep(1_000, "object").bytes],
      ["deep-20000", () => deep(20_000, "array").bytes],
      ["deep-200000", () => deep(200_000, "array").bytes],
      ["huge-within-limit", () => Buffer.from(text.replace(/^\{/, `{"pad":"${"a".repeat(900_000)}",`).replace(/,}$/, "}"))],
      ["huge-past-limit", () => Buffer.from(text.replace(/^\{/, `{"pad":"${"a".repeat(1_200_000)}",`).replace(/,}$/, "}"))],
      ["invalid-utf8-outside-string", () => Buffer.concat([Buffer.from(text), Buffer.from([0xff, 0xfe])])],
      ["utf16", () => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")])],
      ["nul-after", () => Buffer.from(`${text}\u0000`)],
      ["many-keys", () => Buffer.from(`{${Array.from({ length: 10_000 }, (_, i) => `"k${i}":1`).join(",")}}`)],
    );
  });
  return bodies.map(
    ([m, make]): Mutation => ({
      slot: "body",
      m,
      apply: (p) => ({ parts: { ...p, body: make(), headers: withHeader(p.headers, "Content-Type", "application/json") } }),
    }),
  );
}

export interface GeneratorOptions {
  fixtures: Fixtures;
  /** The gateway's port (for the absolute-form target). */
  port: number;
  ownerKeyLength: number;
}

/** Every string of every enum in the document (a value that is right elsewhere is a good wrong value). */
function enumValuesOf(ops: Operation[]): string[] {
  const out = new Set<string>();
  const walk = (s: unknown): void => {
    if (Array.isArray(s)) s.forEach(walk);
    else if (s && typeof s === "object") {
      for (const [k, v] of Object.entries(s)) {
        if (k === "enum" && Array.isArray(v)) {
          for (const x of v) if (typeof x === "string") out.add(x);
        } else walk(v);
      }
    }
  };
  walk(ops);
  return [...out];
}

/** Operations with more inputs get more requests: the surface of POST /v1/tasks is not that of GET /v1/usage. */
const surface = (op: Operation) => 2 + Object.keys(op.body?.properties ?? {}).length + op.pathParams.length + Math.ceil(op.query.length / 2);

function toRequest(op: Operation, parts: Parts, mut: Mutation, anonymous: boolean): FuzzRequest {
  const applied = mut.apply(parts);
  const p = applied.parts ?? parts;
  const { parts: _parts, ...rest } = applied;
  return {
    op: op.id,
    slot: mut.slot,
    mutation: mut.m,
    method: p.method,
    target: buildTarget(op, p),
    headers: p.headers,
    anonymous: anonymous && !applied.customAuth,
    customAuth: applied.customAuth === true,
    ...(p.body ? { body: p.body } : {}),
    framing: "length",
    version: "HTTP/1.1",
    omitHost: false,
    ...rest,
  };
}

/** One request: an operation, then a mutation of one slot (or none), sent as the owner or anonymously. */
export function requestArbitrary(ops: Operation[], opts: GeneratorOptions): fc.Arbitrary<FuzzRequest> {
  const fx = opts.fixtures;
  const allEnumValues = enumValuesOf(ops);
  return fc.oneof(...ops.map((op) => ({ weight: surface(op), arbitrary: fc.constant(op) }))).chain((op) => {
    const noMutation: fc.Arbitrary<Mutation> = fc.constant({ slot: "valid", m: "none", apply: () => ({}) });
    const choices: Array<Weighted<Mutation>> = [
      w(8, noMutation),
      w(10, queryMutation(op, fx, allEnumValues)),
      w(12, headerMutation(op, opts.ownerKeyLength)),
      w(6, framingMutation(op, opts.port)),
      w(3, methodMutation(op)),
      w(op.body ? 8 : 2, wholeBodyMutation(op, fx)),
    ];
    const path = pathMutation(op);
    if (path) choices.push(w(14, path));
    const field = bodyFieldMutation(op, fx, allEnumValues);
    if (field) choices.push(w(30, field));
    // One request in eight is anonymous: the auth layer must keep the same contract.
    return fc.tuple(validParts(op, fx), fc.oneof(...choices), fc.noBias(fc.nat(99))).map(([parts, mut, roll]) => toRequest(op, parts, mut, roll < 12));
  });
}

/** The values that pass a loose schema and used to reach Postgres or a NATS header (issue 9, findings 2 and 4). */
const HAZARDS: ReadonlyArray<{ m: string; text: string; pct: string; dates?: true }> = [
  { m: "nul", text: "a\u0000b", pct: "a%00b" },
  { m: "lone-surrogate", text: "a\ud800b", pct: "a%ED%A0%80b" },
  { m: "crlf", text: "a\r\nb", pct: "a%0D%0Ab" },
  { m: "year-0000", text: "0000-01-01", pct: "0000-01-01", dates: true },
  // A valid-looking local time that is year 10000 in UTC.
  { m: "year-limits", text: "9999-12-31T23:59:59-23:59", pct: "9999-12-31T23%3A59%3A59-23%3A59", dates: true },
];

/**
 * The sweep: every path parameter, query parameter and top-level text field of every operation
 * gets each hazard once, on an otherwise valid request. Random sampling has long tails (a field
 * among 24 of one operation among 26); the sweep makes sure no input is skipped, and the random
 * requests explore the rest.
 */
export function sweepArbitraries(ops: Operation[], opts: GeneratorOptions): Array<fc.Arbitrary<FuzzRequest>> {
  const fx = opts.fixtures;
  const out: Array<fc.Arbitrary<FuzzRequest>> = [];
  const isText = (sch: JsonSchema) => typesOf(sch).includes("string");
  const isTextArray = (sch: JsonSchema) => typesOf(sch).includes("array") && isText(branch(sch, "array").items ?? {});
  for (const op of ops) {
    // A minimal valid request (required inputs only), so that no other field can refuse it first.
    const minimal = validParts(op, fx).map((parts) => ({ ...parts, query: parts.query.filter(([k]) => op.query.some((q) => q.required && q.name === k)) }));
    const at = (mut: Mutation) => minimal.map((parts) => toRequest(op, parts, mut, false));
    const minimalBody = (b: JsonSchema) =>
      validObject({ ...b, properties: Object.fromEntries(Object.entries(b.properties ?? {}).filter(([k]) => (b.required ?? []).includes(k))) }, fx);
    for (const h of HAZARDS) {
      for (const p of op.pathParams) {
        if (h.dates) continue;
        out.push(at({ slot: `path.${p.name}`, m: h.m, apply: (parts) => ({ parts: { ...parts, pathValues: { ...parts.pathValues, [p.name]: h.pct } } }) }));
      }
      for (const q of op.query) {
        if (h.dates && !isDateName(q.name)) continue;
        out.push(
          at({
            slot: `query.${q.name}`,
            m: h.m,
            apply: (parts) => ({ parts: { ...parts, query: [...parts.query.filter(([k]) => k !== q.name), [q.name, h.pct]] } }),
          }),
        );
      }
      const body = op.body;
      for (const [name, sch] of Object.entries(body?.properties ?? {})) {
        if (!body || (h.dates && !isDateName(name)) || !(isText(sch) || isTextArray(sch))) continue;
        const value: Val = isTextArray(sch) ? [h.text] : h.text;
        out.push(
          minimalBody(body).chain((obj) =>
            at({
              slot: `body/${name}`,
              m: h.m,
              apply: (parts) => {
                setOwn(obj, name, value);
                return { parts: { ...parts, body: serialize(obj), headers: withHeader(parts.headers, "Content-Type", "application/json") } };
              },
            }),
          ),
        );
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1

/**
 * The bytes of a request. No `Connection: close`: like most clients, it leaves the connection
 * open and closes it itself after the answer (see sendRaw).
 */
export function encodeRequest(r: FuzzRequest, port: number, ownerKey: string): Buffer {
  const lines: string[] = [`${r.method} ${r.target} ${r.version}`];
  if (!r.omitHost) lines.push(`Host: 127.0.0.1:${port}`);
  if (!r.anonymous && !r.customAuth) lines.push(`Authorization: Bearer ${ownerKey}`);
  for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
  const body = r.body ?? Buffer.alloc(0);
  let payload = body;
  switch (r.framing) {
    case "length":
      if (r.body !== undefined) lines.push(`Content-Length: ${body.length}`);
      break;
    case "chunked":
      lines.push("Transfer-Encoding: chunked");
      payload = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n0\r\n\r\n")]);
      break;
    case "cl-te":
      lines.push(`Content-Length: ${body.length}`, "Transfer-Encoding: chunked");
      payload = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n0\r\n\r\n")]);
      break;
    case "double-cl":
      lines.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`);
      break;
    case "bad-chunk":
      lines.push("Transfer-Encoding: chunked");
      payload = Buffer.concat([Buffer.from("zz\r\n"), body, Buffer.from("\r\n0\r\n\r\n")]);
      break;
    case "cl-negative":
      lines.push("Content-Length: -1");
      break;
    case "cl-garbage":
      lines.push("Content-Length: 1e3");
      break;
  }
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), payload]);
}

export interface RawResponse {
  status: number;
  /** Lower-cased names; repeated headers keep every value. */
  headers: Record<string, string[]>;
  body: Buffer;
}
export type SendResult = { ok: true; res: RawResponse } | { ok: false; error: string; received: Buffer };

/** The first final answer in `buf`, and whether all of its body has arrived. */
function parseResponse(buf: Buffer, headOnly: boolean): { res: RawResponse; complete: boolean } | undefined {
  let rest = buf;
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const head = rest.subarray(0, end).toString("latin1").split("\r\n");
    const m = /^HTTP\/\d\.\d (\d{3})/.exec(head[0] ?? "");
    if (!m) return undefined;
    const status = Number(m[1]);
    const headers: Record<string, string[]> = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(":");
      if (i < 0) continue;
      const k = line.slice(0, i).trim().toLowerCase();
      (headers[k] ??= []).push(line.slice(i + 1).trim());
    }
    rest = rest.subarray(end + 4);
    // An interim 100 Continue comes before the real answer.
    if (status >= 100 && status < 200) continue;
    if (headOnly || status === 204 || status === 304) return { res: { status, headers, body: Buffer.alloc(0) }, complete: true };
    if ((headers["transfer-encoding"]?.[0] ?? "").toLowerCase() === "chunked") {
      const parts: Buffer[] = [];
      let at = 0;
      for (;;) {
        const eol = rest.indexOf("\r\n", at);
        if (eol < 0) return { res: { status, headers, body: Buffer.concat(parts) }, complete: false };
        const size = parseInt(rest.subarray(at, eol).toString("latin1"), 16);
        if (!Number.isFinite(size)) return { res: { status, headers, body: Buffer.concat(parts) }, complete: false };
        if (size === 0) return { res: { status, headers, body: Buffer.concat(parts) }, complete: true };
        parts.push(rest.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
    }
    const length = headers["content-length"]?.[0];
    if (length !== undefined) return { res: { status, headers, body: rest.subarray(0, Number(length)) }, complete: rest.length >= Number(length) };
    // Neither length nor chunks: the body ends when the server closes the connection.
    return { res: { status, headers, body: rest }, complete: false };
  }
}

/**
 * Sends a request on a fresh connection and reads its answer. The body goes out in pieces and
 * stops as soon as the server starts answering (an early 413 or 400 is not waited out: RFC 9112
 * section 9.6), and the connection is closed by us once the answer is complete, or by the server.
 * The socket is never half-closed: Node's HTTP server drops a request whose client has ended.
 */
export function sendRaw(port: number, bytes: Buffer, timeoutMs: number, headOnly = false): Promise<SendResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let done = false;
    const finish = (r: SendResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const socket = connect({ port, host: "127.0.0.1" });
    const timer = setTimeout(() => {
      error = `no answer within ${timeoutMs} ms`;
      socket.destroy();
    }, timeoutMs);
    // One piece at a time, each after the last one left and the event loop has polled: Node
    // destroys a socket on a failed write without reading what already arrived, so a write must
    // never race the server's early answer (curl behaves the same way: it stops sending and reads).
    let offset = 0;
    let ended = false;
    const pump = () => {
      if (offset >= bytes.length || chunks.length || ended || socket.destroyed) return;
      const piece = bytes.subarray(offset, offset + 65_536);
      offset += piece.length;
      socket.write(piece, () => setImmediate(pump));
    };
    socket.on("connect", pump);
    socket.on("end", () => {
      ended = true;
    });
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      const received = Buffer.concat(chunks);
      // A live event stream never ends by itself: its head is the whole answer to judge.
      const stream = (parseResponse(received, true)?.res.headers["content-type"]?.[0] ?? "").startsWith("text/event-stream");
      const parsed = parseResponse(received, headOnly || stream);
      if (parsed?.complete) finish({ ok: true, res: parsed.res });
    });
    socket.on("error", (e: NodeJS.ErrnoException) => {
      error ??= e.code ?? e.message;
    });
    socket.on("close", () => {
      const received = Buffer.concat(chunks);
      const parsed = parseResponse(received, headOnly);
      const declared =
        parsed?.res.headers["content-length"]?.[0] !== undefined || (parsed?.res.headers["transfer-encoding"]?.[0] ?? "").toLowerCase() === "chunked";
      if (parsed && (parsed.complete || !declared)) finish({ ok: true, res: parsed.res });
      else finish({ ok: false, error: parsed ? `answer cut short (${error ?? "closed"})` : (error ?? "connection closed without an answer"), received });
    });
  });
}
