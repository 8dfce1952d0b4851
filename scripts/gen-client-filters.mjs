#!/usr/bin/env node
// Writes the typed client's table of ops per filter field (libs/client/src/filter-ops.ts) from the
// API's own filter table (npm run openapi). The client is published without any package of ours,
// and the document states which ops a field takes in words only, so the table reaches the client
// as generated data; a test runs this again and fails on a diff.
//   node scripts/gen-client-filters.mjs [OUTPUT]
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FILTER_FIELDS } from "@tasksvc/contracts";

const [output = fileURLToPath(new URL("../libs/client/src/filter-ops.ts", import.meta.url))] = process.argv.slice(2);
const rows = Object.entries(FILTER_FIELDS).map(([field, row]) => `  ${field}: [${row.ops.map((op) => JSON.stringify(op)).join(", ")}],`);
writeFileSync(
  output,
  `// Generated from the API's filter table by scripts/gen-client-filters.mjs (npm run openapi): do not edit.
import type { components } from "./schema.js";

type SchemaCondition = Extract<components["schemas"]["TaskFilter"], { field: unknown }>;

/**
 * The ops each field of a search condition takes, as POST /v1/tasks/search checks them. The
 * \`satisfies\` keeps it to the fields and ops of the generated schema, and names every field.
 */
export const TASK_FILTER_OPS = {
${rows.join("\n")}
} as const satisfies Record<SchemaCondition["field"], readonly SchemaCondition["op"][]>;
`,
);
