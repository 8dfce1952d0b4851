import { IF_MATCH_VALUE } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";

// If-Match is forwarded for the tasks service to check under the task's row lock; If-None-Match is answered here.

// IF_MATCH_VALUE is the grammar a batch item's if_match is checked by too.
const TAG = /(W\/)?"[\x21\x23-\x7E\x80-\xFF]*"/g;

export function parseEntityTags(header: string | string[] | undefined, name: "If-Match" | "If-None-Match"): string[] | undefined {
  if (header === undefined) return undefined;
  const v = Array.isArray(header) ? header.join(", ") : header;
  if (!IF_MATCH_VALUE.test(v)) throw fieldError(`/${name}`, 'must be * or one or more entity tags such as "3", separated by commas');
  return v.trim() === "*" ? ["*"] : (v.match(TAG) ?? []);
}

/** If-None-Match compares weakly: W/"3" and "3" name the same version. */
export function noneMatch(tags: readonly string[], etag: string): boolean {
  return !(tags.includes("*") || tags.some((t) => (t.startsWith("W/") ? t.slice(2) : t) === etag));
}
