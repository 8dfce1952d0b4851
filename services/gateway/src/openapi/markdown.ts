import type { Json } from "./schemas.js";

const DATA_KEYS = new Set(["example", "examples", "enum", "const", "default"]);

/**
 * Reference UIs render descriptions with raw HTML allowed and then sanitised: T-<n> outside a code
 * span would be taken for an unknown tag and vanish. `\<` is shown as the character by every renderer.
 */
export function markdownText(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1|(?<!\\)[<>]/g, (m) => (m === "<" || m === ">" ? `\\${m}` : m));
}

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
