import type { Json } from "./schemas.js";

/** Keys whose values are data (examples, allowed values), not prose: their strings stay as they are. */
const DATA_KEYS = new Set(["example", "examples", "enum", "const", "default"]);

/**
 * Descriptions are CommonMark, and reference UIs render them with raw HTML allowed and then
 * sanitised: a placeholder such as T-<n> outside a code span is taken for an unknown tag and
 * vanishes. Every `<` and `>` outside code spans is escaped the CommonMark way (`\<`), which
 * every Markdown renderer shows as the character itself; code spans already show it literally.
 */
export function markdownText(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1|(?<!\\)[<>]/g, (m) => (m === "<" || m === ">" ? `\\${m}` : m));
}

/** Every `description` of the document (info, tags, operations, parameters, responses, headers, schemas) as Markdown text. */
export function escapeDescriptions(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) escapeDescriptions(item);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const obj = node as Json;
  for (const [key, value] of Object.entries(obj)) {
    if (DATA_KEYS.has(key)) continue;
    if (key === "description" && typeof value === "string") obj[key] = markdownText(value);
    else escapeDescriptions(value);
  }
}
