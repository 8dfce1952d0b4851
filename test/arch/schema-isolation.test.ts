import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * Each service owns one schema and may move to a database of its own (docs/operations.md, "A
 * database per service"), so no service's SQL may name another service's schema: no join, no
 * subquery, no foreign key across them. The SQL is what the migrations hold and the text of every
 * template literal in a service's source (the statements are tagged templates), read with
 * TypeScript's parser; the interpolations are not SQL text and are left out.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));

/** The schema each service with a database owns, from its definition (`schema: "<name>"`). */
function schemas(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const service of readdirSync(join(root, "services"))) {
    const def = join(root, "services", service, "src", "service.ts");
    const found = /\bschema: "([a-z_]+)"/.exec(readFileSync(def, "utf8"));
    if (found?.[1]) out[service] = found[1];
  }
  return out;
}

function files(dir: string, ext: string): string[] {
  try {
    return readdirSync(dir).flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? files(p, ext) : p.endsWith(ext) ? [p] : [];
    });
  } catch {
    return [];
  }
}

/** The literal text of every template in a TypeScript source (heads, middles and tails). */
function templateTexts(source: string): string[] {
  const file = ts.createSourceFile("x.ts", source, ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
    else if (ts.isTemplateExpression(node)) out.push(node.head.text, ...node.templateSpans.map((s) => s.literal.text));
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

/** `other.table` names in SQL text, for each schema of `others`. */
function foreignNames(sql: string, others: readonly string[]): string[] {
  if (others.length === 0) return [];
  const re = new RegExp(`(?<![\\w."])"?(${others.join("|")})"?\\s*\\.\\s*"?[a-z_][a-z0-9_]*`, "gi");
  return [...sql.matchAll(re)].map((m) => m[0]);
}

describe("schema isolation", () => {
  it("when SQL names a schema, then the finder sees it in a template or a migration, quoted or not, and not in an interpolation", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template with an interpolation, parsed as code
    const texts = templateTexts('const a = sql`select * from keys.api_keys k join ${x.tasks} t on true`; const b = `x "boards".entries`;');
    expect(texts.flatMap((t) => foreignNames(t, ["keys", "boards", "tasks"]))).toEqual(["keys.api_keys", '"boards".entries']);
    expect(foreignNames("select tasks.id from tasks", ["keys"])).toEqual([]);
  });

  it("when a service's migrations and statements are read, then none names another service's schema", () => {
    const owned = schemas();
    expect(Object.keys(owned).sort()).toEqual(["boards", "gateway", "keys", "notifications", "tasks", "webhooks"]);
    const found: string[] = [];
    for (const [service, schema] of Object.entries(owned)) {
      const others = Object.values(owned).filter((s) => s !== schema);
      const dir = join(root, "services", service);
      for (const f of files(join(dir, "migrations"), ".sql"))
        for (const hit of foreignNames(readFileSync(f, "utf8"), others)) found.push(`${relative(root, f)}: ${hit}`);
      for (const f of files(join(dir, "src"), ".ts"))
        for (const text of templateTexts(readFileSync(f, "utf8"))) for (const hit of foreignNames(text, others)) found.push(`${relative(root, f)}: ${hit}`);
    }
    expect(found).toEqual([]);
  });
});
