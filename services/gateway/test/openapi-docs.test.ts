import { describe, expect, it } from "vitest";
import { z } from "zod";
import { buildOpenApi } from "../src/openapi/document.js";
import { operations } from "../src/routes/index.js";

// A field's description and example are zod metadata on the field itself (libs/contracts), which
// the OpenAPI document is written from: a field renamed, moved into another object or reused keeps
// its documentation, where a glossary keyed by names would silently lose it.

/**
 * Query parameters with no example: reference UIs prefill "Try it out" with examples, and any
 * example would fail (a cursor the API signs; a filter naming an object a caller may not have;
 * `as_of`, which refuses the other filters prefilled beside it, and answers 404 for a task made later).
 */
const WITHOUT_EXAMPLE = new Set(["after", "project_id", "parent_task_id", "series_task_id", "task_id", "as_of"]);

type Def = { innerType?: z.core.$ZodType; element?: z.core.$ZodType; options?: readonly z.core.$ZodType[]; in?: z.core.$ZodType };

/** A field's documentation: its metadata, or that of the schema it makes optional, nullable or defaulted. */
function docOf(field: z.core.$ZodType): z.core.GlobalMeta | undefined {
  const meta = z.globalRegistry.get(field);
  const inner = (field._zod.def as Def).innerType;
  return meta?.description === undefined && inner ? docOf(inner) : meta;
}

/** The objects a schema holds: itself, or inside its optional, nullable, default, array, union or pipe. */
function objectsIn(s: z.core.$ZodType, out: z.ZodObject[] = []): z.ZodObject[] {
  const def = s._zod.def as Def;
  if (s instanceof z.ZodObject) out.push(s);
  else if (def.innerType) objectsIn(def.innerType, out);
  else if (def.element) objectsIn(def.element, out);
  else if (def.options) for (const option of def.options) objectsIn(option, out);
  else if (def.in) objectsIn(def.in, out);
  return out;
}

describe("field documentation", () => {
  it("when the route table's schemas are read, then every field of every path, query, body and response carries its description and example as its own metadata", () => {
    const missing: string[] = [];
    const seen = new Set<z.ZodObject>();
    const check = (object: z.ZodObject, at: string, query: boolean) => {
      if (seen.has(object)) return;
      seen.add(object);
      for (const [name, field] of Object.entries(object.shape as Record<string, z.ZodType>)) {
        const meta = docOf(field);
        const exampleOptional = query && WITHOUT_EXAMPLE.has(name);
        if (typeof meta?.description !== "string" || (!exampleOptional && !Array.isArray(meta["examples"]))) missing.push(`${at}.${name}`);
        for (const inner of objectsIn(field)) check(inner, `${at}.${name}`, false);
      }
    };
    for (const op of operations) {
      const parts: Array<[string, z.ZodType | undefined]> = [
        ["path", op.params],
        ["query", op.query],
        ["body", op.body],
        ["response", op.response],
      ];
      for (const [where, schema] of parts) if (schema) for (const object of objectsIn(schema)) check(object, `${op.operationId} ${where}`, where === "query");
    }
    expect(missing).toEqual([]);
  });

  it("when a resource is extended (a created key, a created or rotated endpoint), then its fields say in the document what the resource's say", () => {
    const schemas = (buildOpenApi(operations) as { components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> } })
      .components.schemas;
    const docs = (name: string) =>
      Object.fromEntries(Object.entries(schemas[name]?.properties ?? {}).map(([field, s]) => [field, [s["description"], s["examples"]]]));
    for (const [base, extended] of [
      ["ApiKey", "CreatedApiKey"],
      ["WebhookEndpoint", "CreatedWebhookEndpoint"],
      ["WebhookEndpoint", "RotatedWebhookEndpoint"],
    ] as const) {
      expect(docs(extended), extended).toMatchObject(docs(base));
    }
  });
});
