import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { describe, expect, it } from "vitest";
import { breakingChanges } from "./openapi-breaking.js";

// The committed OpenAPI document (docs/openapi.json, kept current by
// services/gateway/test/openapi.test.ts) passes a linter, and breaks no client written against
// the last released one (docs/openapi.released.json) unless that file is updated on purpose
// (`npm run openapi:release`, in the same change, saying why).
const read = (name: string) => readFileSync(fileURLToPath(new URL(`../../docs/${name}`, import.meta.url)), "utf8");
const current = () => JSON.parse(read("openapi.json"));
/**
 * Optional parameters with no example, because reference UIs prefill "Try it out" with examples
 * and any example would fail: a cursor the API signs, a key that must be new for each request,
 * filters naming an object (a project, a task) a caller's organization may not have.
 */
const WITHOUT_EXAMPLE = new Set([
  "after",
  // Prefilled, it would turn every read of a task or the list into a read of the past.
  "as_of",
  "Idempotency-Key",
  "If-Match",
  "If-None-Match",
  "Last-Event-ID",
  "project_id",
  "parent_task_id",
  "series_task_id",
  "task_id",
]);
const released = () => JSON.parse(read("openapi.released.json"));

describe("the OpenAPI document's quality", () => {
  it("when linted with Redocly's recommended-strict rules and more, then nothing is reported", async () => {
    const config = await createConfig({
      extends: ["recommended-strict"],
      rules: {
        "info-license": "error",
        "info-license-strict": "error",
        // The committed document names a gateway on localhost on purpose: it belongs to no one
        // deployment, and a running gateway serves the document with its own base URL instead.
        "no-server-example.com": "off",
        "operation-4xx-problem-details-rfc7807": "error",
        "operation-description": "error",
        "operation-tag-defined": "error",
        "operation-singular-tag": "error",
        "tag-description": "error",
        "paths-kebab-case": "error",
        "no-unused-components": "error",
        // Every example is checked against its schema.
        "no-invalid-schema-examples": "error",
        "no-invalid-parameter-examples": "error",
        // Request body examples too (test/e2e/docs-examples.test.ts also sends each one).
        "no-invalid-media-type-examples": "error",
      },
    });
    const problems = await lintFromString({ source: read("openapi.json"), absoluteRef: "openapi.json", config });
    const lines = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? "?"}`);
    // The OAuth endpoints answer invalid_client in OAuth's own shape (RFC 6749 5.2), which client
    // libraries read; no problem+json 401 exists there to document.
    const oauth401 = /^error operation-4xx-problem-details-rfc7807: .* at #\/paths\/~1oauth~1[a-z]+\/post\/responses\/401$/;
    expect(lines.filter((l) => !oauth401.test(l))).toEqual([]);
  });

  it("when read, then every field of every schema and every parameter has a description and an example, and every operation a tag, summary and description", () => {
    const doc = current();
    const missing: string[] = [];
    const walk = (schema: Record<string, unknown>, at: string) => {
      const props = (schema["properties"] ?? {}) as Record<string, Record<string, unknown>>;
      for (const [name, value] of Object.entries(props)) {
        if (typeof value["description"] !== "string" || !Array.isArray(value["examples"])) missing.push(`${at}.${name}`);
        walk(value, `${at}.${name}`);
      }
      for (const m of [...((schema["anyOf"] as Record<string, unknown>[]) ?? []), ...((schema["oneOf"] as Record<string, unknown>[]) ?? [])]) walk(m, at);
      if (typeof schema["items"] === "object" && schema["items"] !== null) walk(schema["items"] as Record<string, unknown>, `${at}[]`);
    };
    for (const [name, schema] of Object.entries(doc.components.schemas as Record<string, Record<string, unknown>>)) walk(schema, name);
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Record<string, unknown>>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method.toUpperCase()} ${path}`;
        if (!op["summary"] || !op["description"] || !(op["tags"] as unknown[] | undefined)?.length) missing.push(`${where} (summary, description, tag)`);
        for (const p of (op["parameters"] as Array<Record<string, unknown>>) ?? []) {
          if (!p["description"] || (p["example"] === undefined && !(p["required"] !== true && WITHOUT_EXAMPLE.has(String(p["name"])))))
            missing.push(`${where} ${String(p["in"])}:${String(p["name"])}`);
        }
      }
    }
    expect(missing, "document each field on its zod schema: .meta({ description, examples: [...] })").toEqual([]);
  });

  it("when compared with the last released document, then no change breaks an existing client", () => {
    const found = breakingChanges(released(), current());
    expect(found, `Breaking changes against docs/openapi.released.json; if they are on purpose, run \`npm run openapi:release\`:\n${found.join("\n")}`).toEqual(
      [],
    );
  });
});

describe("the breaking-change check", () => {
  const base = released();
  const changed = (edit: (doc: ReturnType<typeof current>) => void) => {
    const doc = structuredClone(base);
    edit(doc);
    return breakingChanges(base, doc);
  };

  it("when an operation is removed or its operationId renamed, then it is reported", () => {
    expect(changed((d) => delete d.paths["/v1/tasks/{task_id}"].get)).toEqual(["GET /v1/tasks/{task_id}: operation removed"]);
    expect(
      changed((d) => {
        d.paths["/v1/tasks"].get.operationId = "getTasks";
      }),
    ).toEqual(["GET /v1/tasks: operationId listTasks renamed getTasks"]);
  });

  it("when a response field is removed, retyped or made nullable, then it is reported", () => {
    expect(changed((d) => delete d.components.schemas.Task.properties.title)).toContain("GET /v1/tasks/{task_id} 200.title: response field removed");
    expect(
      changed((d) => {
        d.components.schemas.Task.properties.title = { type: "number" };
      }),
    ).toContain("GET /v1/tasks/{task_id} 200.title: response type now also number (was string)");
    expect(
      changed((d) => {
        d.components.schemas.Project.properties.name = { type: ["string", "null"] };
      }),
    ).toContain("GET /v1/projects/{project_id} 200.name: response type now also null (was string)");
  });

  it("when an input becomes required or is no longer accepted, then it is reported", () => {
    expect(
      changed((d) => {
        d.components.schemas.CreateTaskRequest.required = [...(d.components.schemas.CreateTaskRequest.required ?? []), "notes"];
      }),
    ).toContain("POST /v1/tasks body.notes: input newly required");
    expect(changed((d) => delete d.components.schemas.CreateProjectRequest.properties.description)).toContain(
      "POST /v1/projects body.description: input field no longer accepted",
    );
    expect(
      changed((d) => {
        d.paths["/v1/tasks"].get.parameters.push({ name: "team", in: "query", required: true, schema: { type: "string" } });
      }),
    ).toContain("GET /v1/tasks query:team: parameter newly required");
  });

  it("when fields are only added (a new optional input, a new response field, a new operation), then nothing is reported", () => {
    expect(
      changed((d) => {
        d.components.schemas.Task.properties.color = { type: "string" };
        d.components.schemas.CreateTaskRequest.properties.color = { type: "string" };
        d.paths["/v1/colors"] = { get: structuredClone(d.paths["/v1/usage"].get) };
      }),
    ).toEqual([]);
  });
});
