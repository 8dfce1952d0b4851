import { IDEMPOTENCY_KEY_PATTERN } from "@tasksvc/contracts";
import { z } from "zod";
import type { Operation } from "../pipeline/operation.js";
import { conditionalParameters } from "./conditional.js";
import { docOf, type Json, schemaOf } from "./schemas.js";

export function parametersOf(def: Operation): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [
    ["path", def.params],
    ["query", def.query],
  ] as const) {
    if (!schema) continue;
    const js = schemaOf(schema, "input") as { properties?: Record<string, Json>; required?: string[] };
    const fields: Record<string, z.ZodType> = schema instanceof z.ZodObject ? schema.shape : {};
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      // Read from the field, not from its JSON Schema: zod leaves the examples out of a transforming
      // field's input form (a query flag that arrives as text).
      const field = fields[name];
      const doc = field === undefined ? undefined : docOf(field);
      const { description: _description, examples: _examples, ...valueSchema } = s;
      out.push({
        name,
        in: where,
        required: where === "path" || (js.required ?? []).includes(name),
        ...(doc?.description === undefined ? {} : { description: doc.description }),
        ...(Array.isArray(doc?.["examples"]) ? { example: doc["examples"][0] } : {}),
        schema: valueSchema,
      });
    }
  }
  out.push(...conditionalParameters(def));
  if (def.idempotent) {
    out.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "Retry safely: the same key and byte-identical body within 24 h replays the first response. Use a new key for each new request, a UUID for example (`3f1c9a52-6b1e-4d4a-9a57-0c2f7e8b1d20`).",
      // No example: "Try it out" would send the same key with every request, replaying the first
      // response instead of doing what was asked.
      schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
    });
  }
  return out;
}
