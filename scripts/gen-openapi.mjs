#!/usr/bin/env node
// Writes docs/openapi.json from the built gateway's operations (npm run openapi).
import { writeFileSync } from "node:fs";
import { buildOpenApi, operations } from "@tasksvc/gateway";

const out = new URL("../docs/openapi.json", import.meta.url);
writeFileSync(out, `${JSON.stringify(buildOpenApi(operations), null, 2)}\n`);
console.log(`wrote ${out.pathname}`);
