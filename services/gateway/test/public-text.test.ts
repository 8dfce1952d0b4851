import { describe, expect, it } from "vitest";
import { errorsPage } from "../src/openapi/errors-page.js";
import { buildOpenApi } from "../src/openapi/document.js";
import { markdownText } from "../src/openapi/markdown.js";
import { operations } from "../src/routes/index.js";

// The OpenAPI document (/docs, the typed client) and the errors page speak to the API's users:
// they cite none of the project's own material, which users cannot read, and what they write
// shows as written.
const INTERNAL: Array<[RegExp, string]> = [
  [/\bspec(?:ification)?\b/i, "the project's spec"],
  [/\bsection\s+\d|§\s*\d/i, "a section number"],
  [/\bissues?\s*#?\d+|(?:^|[\s(])#\d+\b/i, "an issue number"],
  [/\bdecisions?\s+\d+|\bdecisions\/|\bADR[- ]?\d/i, "a decision"],
  [/\bmigrations?\s+\d{4}/i, "a migration"],
  // A repository path; a URL path such as /docs/errors is preceded by "/" and is public, and so are
  // the MCP methods tools/list and tools/call.
  [/(?<![\w/.-])(?:services|libs|scripts|tools(?!\/(?:list|call)\b)|deploy|test|docs)\/[\w.-]/, "a source path"],
  [/\b[\w-]+\.(?:ts|tsx|mts|mjs|cjs|sql|md)\b/, "a source file"],
];

/** Each internal reference in a text: `where: what ("the text around it")`. */
function internalReferences(where: string, text: string): string[] {
  return INTERNAL.flatMap(([pattern, what]) => {
    const m = pattern.exec(text);
    return m ? [`${where}: ${what} ("${text.slice(Math.max(0, m.index - 40), m.index + m[0].length + 40)}")`] : [];
  });
}

/** Every string of a JSON value with its pointer, patterns (regular expressions, not prose) left out. */
function stringsOf(value: unknown, at = ""): Array<[string, string]> {
  if (typeof value === "string") return [[at, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsOf(v, `${at}/${i}`));
  if (typeof value === "object" && value !== null)
    return Object.entries(value).flatMap(([k, v]) => (k === "pattern" ? [] : stringsOf(v, `${at}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`)));
  return [];
}

describe("public text", () => {
  const doc = buildOpenApi(operations);

  it("when the OpenAPI document is read, then no description, summary or example cites a spec section, issue, decision or source path", () => {
    const found = stringsOf(doc).flatMap(([at, text]) => internalReferences(at, text));
    expect(found).toEqual([]);
  });

  it("when the errors page is rendered, then it cites no spec section, issue, decision or source path, not even in its HTML", () => {
    expect(internalReferences("/docs/errors", errorsPage())).toEqual([]);
    // The page without its Markdown (a broken image): the catalog alone.
    expect(internalReferences("/docs/errors (catalog only)", errorsPage(null))).toEqual([]);
  });

  it("when the errors page's Markdown holds a comment or a <placeholder>, then the comment is left out and the placeholder shown as written", () => {
    const page = errorsPage("Tasks are numbered T-<n>.\n\n<!-- For maintainers: see the design notes. -->\n\nSend `Bearer <key>`.\n");
    expect(page).toContain("Tasks are numbered T-&#60;n&#62;.");
    expect(page).toContain("<code>Bearer &lt;key&gt;</code>");
    expect(page).not.toContain("maintainers");
  });

  it("when the check meets an internal reference, then it reports it (the check is not vacuous)", () => {
    for (const text of [
      "Replays the first response (spec section 8).",
      "See spec 4.1.",
      "A link (issue 12) that expired.",
      "Why: decision 0015.",
      "See docs/decisions/0010-input-and-edge-errors.md.",
      "Kept in libs/contracts/src/codes.ts.",
      "Built by services/gateway/src/openapi.ts",
    ])
      expect(internalReferences("test", text), text).not.toEqual([]);
    for (const text of [
      "A section of the day's board.",
      "See https://api.example.com/docs/errors#validation_failed and /docs/errors.",
      "Tasks numbered T-<n>.",
    ])
      expect(internalReferences("test", text), text).toEqual([]);
  });

  it("when a description holds a <placeholder>, then it is escaped for Markdown outside code spans and left alone inside them", () => {
    expect(markdownText("Tasks numbered T-<n> per organization")).toBe("Tasks numbered T-\\<n\\> per organization");
    expect(markdownText("Send `Authorization: Bearer <key>`, then <b>")).toBe("Send `Authorization: Bearer <key>`, then \\<b\\>");
    // Applied twice, it changes nothing more.
    expect(markdownText(markdownText("T-<n>"))).toBe("T-\\<n\\>");
    const unescaped = stringsOf(doc)
      .filter(([at]) => /\/description$/.test(at) && !/\/(?:examples?|enum|const|default)\//.test(at))
      .filter(([, text]) => /(?<!\\)[<>]/.test(text.replace(/(`+)[\s\S]*?\1/g, "")))
      .map(([at, text]) => `${at}: ${text}`);
    expect(unescaped).toEqual([]);
  });
});
