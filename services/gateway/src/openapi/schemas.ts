import { TaskFilterSchema } from "@tasksvc/contracts";
import { z } from "zod";

export type Json = Record<string, unknown>;

/** Input schemas that are components of their own: recursive, so that they can refer to themselves (their JSON Schema names them by component). */
export const NAMED_INPUTS: Readonly<Record<string, z.ZodType>> = { TaskFilter: TaskFilterSchema };

export const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);
export const COMPONENT_REF = (id: string) => `#/components/schemas/${id}`;
const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** zod writes a field's metadata before or after those depending on where the field states it. */
function docsLast(schema: Json): void {
  for (const key of ["description", "examples"]) {
    if (!(key in schema)) continue;
    const value = schema[key];
    delete schema[key];
    schema[key] = value;
  }
  const props = isJson(schema["properties"]) ? Object.values(schema["properties"]) : [];
  const members = ["anyOf", "oneOf", "allOf"].flatMap((k) => (Array.isArray(schema[k]) ? (schema[k] as unknown[]) : []));
  for (const sub of [...props, ...members, schema["items"], schema["additionalProperties"]]) if (isJson(sub)) docsLast(sub);
}

export function componentsOf(registry: z.core.$ZodRegistry<{ id?: string | undefined }>, io: "input" | "output"): Record<string, Json> {
  const out = z.toJSONSchema(registry, { target: "draft-2020-12", io, unrepresentable: "any", uri: COMPONENT_REF }) as {
    schemas: Record<string, Json>;
  };
  const schemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(out.schemas)) {
    const { $schema: _drop, $id: _ref, id: _id, ...rest } = schema;
    docsLast(rest);
    schemas[id] = rest;
  }
  return schemas;
}

export const schemaOf = (s: z.ZodType, io: "input" | "output"): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  return rest;
};

export function docOf(field: z.core.$ZodType): z.core.GlobalMeta | undefined {
  const meta = z.globalRegistry.get(field);
  const inner = (field._zod.def as { innerType?: z.core.$ZodType }).innerType;
  return meta?.description === undefined && inner ? docOf(inner) : meta;
}
