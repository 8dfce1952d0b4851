#!/usr/bin/env node
// Writes src/idempotent.ts from the OpenAPI document: the operations that take an
// Idempotency-Key, the only writes the client may send twice. Run by `npm run generate`.
import { readFileSync, writeFileSync } from "node:fs";

const [input = "../../docs/openapi.json", output = "src/idempotent.ts"] = process.argv.slice(2);
const doc = JSON.parse(readFileSync(input, "utf8"));
const isKey = (p) => {
  const ref = typeof p.$ref === "string" ? p.$ref.split("/").pop() : undefined;
  const param = ref ? doc.components?.parameters?.[ref] : p;
  return param?.in === "header" && String(param.name).toLowerCase() === "idempotency-key";
};
const ops = [];
for (const [path, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (typeof op === "object" && op !== null && (op.parameters ?? []).some(isKey)) ops.push(`${method.toUpperCase()} ${path}`);
  }
}
ops.sort();
const lines = ops.map((o) => `  ${JSON.stringify(o)},`).join("\n");
writeFileSync(
  output,
  `// Generated from docs/openapi.json by scripts/idempotent-operations.mjs: do not edit.
/** The operations that take an Idempotency-Key ("METHOD /path/{param}"): a retry of one of them makes no twin. */
export const IDEMPOTENT_OPERATIONS: ReadonlySet<string> = new Set([
${lines}
]);
`,
);
