/**
 * What in a new OpenAPI document would break a client written against an older one (issue 14):
 * an operation removed, or its operationId renamed (generated clients call it by that name); a
 * response field removed, or given a type the client does not expect (a new `null` included); a
 * request input that becomes required, or a field or type the server stops accepting (our bodies
 * are strict: an unknown field is a 400). Additions that old clients ignore or need not send are
 * not breaking. The document's own schemas are compared, `$ref`s followed into components.
 */
type Json = Record<string, unknown>;
type Doc = { paths?: Record<string, Record<string, Json>>; components?: { schemas?: Record<string, Json> } };

const METHODS = ["get", "post", "put", "patch", "delete"];
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function resolve(doc: Doc, schema: unknown): Json {
  let s = isObj(schema) ? schema : {};
  for (let i = 0; i < 20 && typeof s["$ref"] === "string"; i++) {
    const name = (s["$ref"] as string).replace("#/components/schemas/", "");
    s = doc.components?.schemas?.[name] ?? {};
  }
  return s;
}

/** The JSON types a schema allows (anyOf/oneOf members flattened; "integer" counts as a number). */
function types(doc: Doc, schema: unknown): Set<string> {
  const s = resolve(doc, schema);
  const out = new Set<string>();
  const members = [...((s["anyOf"] as unknown[]) ?? []), ...((s["oneOf"] as unknown[]) ?? [])];
  for (const m of members) for (const t of types(doc, m)) out.add(t);
  const t = s["type"];
  for (const x of Array.isArray(t) ? t : t === undefined ? [] : [t]) out.add(x === "integer" ? "number" : String(x));
  if (s["const"] !== undefined || s["enum"] !== undefined) out.add(typeof (s["const"] ?? (s["enum"] as unknown[])[0]) === "string" ? "string" : "number");
  return out;
}

function properties(doc: Doc, schema: unknown): { props: Record<string, unknown>; required: Set<string> } | undefined {
  const s = resolve(doc, schema);
  if (!isObj(s["properties"])) return undefined;
  return { props: s["properties"] as Record<string, unknown>, required: new Set((s["required"] as string[]) ?? []) };
}

const itemsOf = (doc: Doc, schema: unknown): unknown => resolve(doc, schema)["items"];

/** Response side: every old field still there, none widened to a type the client never saw. */
function compareOutput(a: Doc, b: Doc, old: unknown, now: unknown, where: string, out: string[], depth = 0): void {
  if (depth > 8) return;
  const [ta, tb] = [types(a, old), types(b, now)];
  const widened = [...tb].filter((t) => ta.size > 0 && !ta.has(t));
  if (widened.length > 0) out.push(`${where}: response type now also ${widened.join(", ")} (was ${[...ta].join(", ")})`);
  const pa = properties(a, old);
  const pb = properties(b, now);
  if (pa) {
    for (const [name, schema] of Object.entries(pa.props)) {
      if (!pb || !(name in pb.props)) out.push(`${where}.${name}: response field removed`);
      else compareOutput(a, b, schema, pb.props[name], `${where}.${name}`, out, depth + 1);
    }
  }
  const [ia, ib] = [itemsOf(a, old), itemsOf(b, now)];
  if (ia !== undefined && ib !== undefined) compareOutput(a, b, ia, ib, `${where}[]`, out, depth + 1);
}

/** Request side: nothing newly required, nothing old no longer accepted. */
function compareInput(a: Doc, b: Doc, old: unknown, now: unknown, where: string, out: string[], depth = 0): void {
  if (depth > 8) return;
  const [ta, tb] = [types(a, old), types(b, now)];
  const narrowed = [...ta].filter((t) => tb.size > 0 && !tb.has(t));
  if (narrowed.length > 0) out.push(`${where}: no longer accepts ${narrowed.join(", ")}`);
  const pa = properties(a, old);
  const pb = properties(b, now);
  if (pb) {
    for (const name of pb.required) if (!pa?.required.has(name)) out.push(`${where}.${name}: input newly required`);
  }
  if (pa && pb) {
    for (const [name, schema] of Object.entries(pa.props)) {
      if (!(name in pb.props)) out.push(`${where}.${name}: input field no longer accepted`);
      else compareInput(a, b, schema, pb.props[name], `${where}.${name}`, out, depth + 1);
    }
  }
}

const jsonSchemaOf = (content: unknown): unknown => {
  if (!isObj(content)) return undefined;
  const media = (content["application/json"] ?? Object.values(content)[0]) as Json | undefined;
  return media?.["schema"];
};

export function breakingChanges(before: Doc, after: Doc): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(before.paths ?? {})) {
    for (const method of METHODS) {
      const old = ops[method];
      if (!isObj(old)) continue;
      const name = `${method.toUpperCase()} ${path}`;
      const now = after.paths?.[path]?.[method];
      if (!isObj(now)) {
        out.push(`${name}: operation removed`);
        continue;
      }
      if (old["operationId"] !== now["operationId"]) out.push(`${name}: operationId ${String(old["operationId"])} renamed ${String(now["operationId"])}`);
      // Parameters: a new required one, or an old one no longer accepted.
      const params = (op: Json) => new Map(((op["parameters"] as Json[]) ?? []).map((p) => [`${String(p["in"])}:${String(p["name"])}`, p]));
      const [pa, pb] = [params(old), params(now)];
      for (const [key, p] of pb) if (p["required"] === true && pa.get(key)?.["required"] !== true) out.push(`${name} ${key}: parameter newly required`);
      for (const [key, p] of pa) {
        const q = pb.get(key);
        if (!q) out.push(`${name} ${key}: parameter no longer accepted`);
        else compareInput(before, after, p["schema"], q["schema"], `${name} ${key}`, out);
      }
      // Request body.
      const body = (op: Json) => (isObj(op["requestBody"]) ? (op["requestBody"] as Json) : undefined);
      const [ba, bb] = [body(old), body(now)];
      if (bb?.["required"] === true && ba?.["required"] !== true) out.push(`${name}: request body newly required`);
      if (ba && bb) compareInput(before, after, jsonSchemaOf(ba["content"]), jsonSchemaOf(bb["content"]), `${name} body`, out);
      // Success responses.
      const responses = (op: Json) => (isObj(op["responses"]) ? (op["responses"] as Record<string, Json>) : {});
      const [ra, rb] = [responses(old), responses(now)];
      for (const [status, r] of Object.entries(ra)) {
        if (!status.startsWith("2")) continue;
        const s = rb[status];
        if (!s) {
          out.push(`${name}: response ${status} removed`);
          continue;
        }
        const [sa, sb] = [jsonSchemaOf(r["content"]), jsonSchemaOf(s["content"])];
        if (sa !== undefined && sb !== undefined) compareOutput(before, after, sa, sb, `${name} ${status}`, out);
      }
    }
  }
  return out;
}
