import { readFileSync } from "node:fs";
import { ERROR_CATALOG, ERROR_CODES } from "@tasksvc/contracts";
import { Marked } from "marked";

/** In the repository and in the image (deploy/Dockerfile copies it). */
export const ERRORS_MD = new URL("../../../../docs/errors.md", import.meta.url);

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/<[^>]+>/g, "")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");

/** HTML comments (notes for the file's maintainers) left out and any other HTML shown as text; without the file (a broken image), the catalog alone. */
export function errorsPage(markdown: string | null = readErrorsMarkdown()): string {
  const style =
    "body{font:15px/1.55 system-ui,sans-serif;max-width:1000px;margin:2rem auto;padding:0 1rem;color:#1d1d1f}" +
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem .5rem;text-align:left;vertical-align:top}" +
    "tr:target{background:#fff6d6}code{background:#f4f4f4;padding:0 .2rem;border-radius:3px}pre{background:#f4f4f4;padding:.8rem;overflow:auto}";
  const body = markdown === null ? catalogTable() : render(markdown);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Errors · Task Service API</title><style>${style}</style></head><body>${body}<p><a href="/docs">API reference</a></p></body></html>`;
}

function readErrorsMarkdown(): string | null {
  try {
    return readFileSync(ERRORS_MD, "utf8");
  } catch {
    return null;
  }
}

function render(markdown: string): string {
  const marked = new Marked({
    renderer: {
      heading({ tokens, depth }) {
        const text = this.parser.parseInline(tokens);
        return `<h${depth} id="${slug(text)}">${text}</h${depth}>\n`;
      },
      // The page is the Markdown's text: `<n>` outside a code span is shown, not taken for a tag.
      html({ text }) {
        return text.trimStart().startsWith("<!--") ? "" : esc(text);
      },
      link({ href, tokens }) {
        const text = this.parser.parseInline(tokens);
        // Repository paths are not served.
        return href.startsWith("#") || /^https?:\/\//.test(href) ? `<a href="${esc(href)}">${text}</a>` : text;
      },
    },
  });
  const html = marked.parse(markdown, { async: false });
  return html.replace(
    /<tr>\s*<td>(\d{3})<\/td>\s*<td><code>([a-z_]+)<\/code><\/td>/g,
    (_m, status: string, code: string) => `<tr id="${code}">\n<td>${status}</td>\n<td><code>${code}</code></td>`,
  );
}

function catalogTable(): string {
  return (
    `<h1>Errors</h1><table><thead><tr><th>Status</th><th>Code</th><th>Title</th></tr></thead><tbody>` +
    ERROR_CODES.map((c) => `<tr id="${c}"><td>${ERROR_CATALOG[c].status}</td><td><code>${c}</code></td><td>${esc(ERROR_CATALOG[c].title)}</td></tr>`).join("") +
    `</tbody></table>`
  );
}
