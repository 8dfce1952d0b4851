import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { COMMANDS, runCli } from "@tasksvc/admin";
import {
  EVENT_RETENTION_DAYS,
  MAX_BATCH_OPERATIONS,
  MAX_LIVE_API_KEYS,
  MAX_STREAMS_PER_CREDENTIAL,
  MAX_STREAMS_PER_ORGANIZATION,
  PLAN_DEFAULTS,
  PLANS,
  QUOTA_PERIOD_SECONDS,
} from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";

// A clone of this repository is all a user has: what they read (the README, the docs pages, the
// packages' READMEs, the CLI's and make's help, the OpenAPI text) must not send them to files
// that live beside the repository, where only its authors have them.
const root = fileURLToPath(new URL("../..", import.meta.url));
const read = (f: string) => readFileSync(join(root, f), "utf8");

/** Text that points outside the repository: the authors' spec, design and style pages, or a section of them. */
const OUTSIDE = /\.\.\/shared|spec\/task-service-api|\bDESIGN\b|\bSTYLE\b|\bspec (section )?\d/;

const inDir = (dir: string, keep: (name: string) => boolean) =>
  existsSync(join(root, dir))
    ? readdirSync(join(root, dir))
        .filter(keep)
        .sort()
        .map((n) => `${dir}/${n}`)
    : [];
const readmesUnder = (dir: string) => inDir(dir, (n) => existsSync(join(root, dir, n, "README.md"))).map((d) => `${d}/README.md`);

/** Every page a user or operator reads in a clone; docs/decisions are the authors' records. */
function userPages(): string[] {
  return [
    "README.md",
    "deploy/README.md",
    ...inDir("docs", (n) => n.endsWith(".md")),
    ...readmesUnder("libs"),
    ...readmesUnder("services"),
    ...readmesUnder("tools"),
    ...inDir("examples", () => true),
  ];
}

const offending = (texts: Array<[string, string]>) =>
  texts.flatMap(([where, text]) =>
    text
      .split("\n")
      .map((line, i) => ({ line, at: `${where}:${i + 1}` }))
      .filter(({ line }) => OUTSIDE.test(line))
      .map(({ line, at }) => `${at}: ${line.trim()}`),
  );

/** What `tasksvc-admin --help` and each `<command> --help` print. */
async function cliHelp(): Promise<Array<[string, string]>> {
  const pages: Array<[string, string]> = [];
  for (const argv of [["--help"], ...Object.keys(COMMANDS).map((c) => [c, "--help"])]) {
    const out: string[] = [];
    const noNats = () => Promise.reject(new Error("help must not connect"));
    const code = await runCli(argv, noNats, { out: (l) => out.push(l), err: (l) => out.push(l) });
    expect(code, argv.join(" ")).toBe(0);
    pages.push([`tasksvc-admin ${argv.join(" ")}`, out.join("\n")]);
  }
  return pages;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

describe("the repository stands alone", () => {
  it("when a user reads any page of a clone, then none points to the authors' spec, design or style pages outside it", () => {
    const pages = userPages();
    expect(pages).toEqual(
      expect.arrayContaining(["README.md", "docs/api.md", "docs/plans.md", "docs/errors.md", "libs/client/README.md", "tools/admin/README.md"]),
    );
    expect(offending(pages.map((f) => [f, read(f)]))).toEqual([]);
  });

  it("when a user asks the admin CLI or make for help, then the help points only inside the repository, and to the plans and the API pages", async () => {
    const help = await cliHelp();
    const makeHelp = read("Makefile")
      .split("\n")
      .filter((l) => /^[a-z-]+:.*## /.test(l))
      .map((l) => l.replace(/^.*## /, ""));
    expect(makeHelp.length).toBeGreaterThan(5);
    expect(offending([...help, ["make help", makeHelp.join("\n")]])).toEqual([]);
    const page = (name: string) => help.find(([where]) => where === name)?.[1] ?? "";
    expect(page("tasksvc-admin --help")).toContain("docs/plans.md");
    expect(page("tasksvc-admin --help")).toContain("docs/api.md");
    for (const c of ["set-plan", "set-limits", "bootstrap"]) expect(page(`tasksvc-admin ${c} --help`), c).toContain("docs/plans.md");
  });

  it("when a client reads the OpenAPI document, then none of its text points outside the repository", () => {
    const strings: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === "string") strings.push(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === "object") Object.values(v).forEach(walk);
    };
    walk(JSON.parse(read("docs/openapi.json")));
    expect(strings.length).toBeGreaterThan(500);
    expect(offending([["docs/openapi.json", strings.join("\n")]])).toEqual([]);
  });

  it("when a user follows a relative link on any page, then the file (and the heading it names) is in the repository", () => {
    const broken: string[] = [];
    for (const page of userPages().filter((f) => f.endsWith(".md"))) {
      // Fenced code is an example, not a link.
      const text = read(page).replace(/```[\s\S]*?```/g, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!target || /^[a-z]+:/i.test(target)) continue;
        const [path = "", anchor] = target.split("#");
        const file = path === "" ? page : relative(root, join(root, dirname(page), path));
        if (!existsSync(join(root, file))) {
          broken.push(`${page}: ${target} (no ${file})`);
          continue;
        }
        if (anchor && file.endsWith(".md")) {
          const headings = read(file)
            .split("\n")
            .filter((l) => /^#{1,6} /.test(l))
            .map((l) => slug(l.replace(/^#+ /, "")));
          if (!headings.includes(anchor)) broken.push(`${page}: ${target} (no heading #${anchor} in ${file})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("when a newcomer opens the README, then it links the API overview, the plans and the licence", () => {
    const readme = read("README.md");
    for (const link of ["(docs/api.md)", "(docs/plans.md)", "(LICENSE)"]) expect(readme).toContain(link);
  });
});

const MiB = 1024 * 1024;
const size = (bytes: number) => (bytes % (1024 * MiB) === 0 ? `${bytes / (1024 * MiB)} GiB` : `${bytes / MiB} MiB`);
const count = (n: number) => n.toLocaleString("en-US");

/** The plan table of docs/plans.md, written out from the plan defaults the services enforce. */
function planTable(): string {
  const row = (label: string, cell: (p: (typeof PLAN_DEFAULTS)[keyof typeof PLAN_DEFAULTS]) => string, override: string) =>
    `| ${label} | ${PLANS.map((p) => cell(PLAN_DEFAULTS[p])).join(" | ")} | ${override} |`;
  return [
    `| | ${PLANS.join(" | ")} | operator override |`,
    `|---|${PLANS.map(() => "---|").join("")}---|`,
    row("Entitlements", (p) => p.entitlements.map((e) => `\`${e}\``).join(", "), "(with the plan)"),
    row("Burst: requests per credential", (p) => `${p.burst} per ${p.burstWindowSeconds} s`, "`set-limits --burst N`"),
    row(`API calls per ${QUOTA_PERIOD_SECONDS / 86_400}-day billing period`, (p) => count(p.quota), "`set-limits --quota N`"),
    row("Largest attachment", (p) => size(p.maxFileSize), "`set-limits --max-file-size BYTES`"),
    row("Attachment storage", (p) => size(p.storage), "`set-limits --storage BYTES`"),
    row("Webhook endpoints", (p) => (p.webhookEndpoints === 0 ? "none" : String(p.webhookEndpoints)), "`set-limits --webhook-endpoints N`"),
  ].join("\n");
}

describe("docs/plans.md", () => {
  const page = read("docs/plans.md");

  it("when a plan's defaults change in code, then the page's table says the same (or this fails)", () => {
    expect(page).toContain(`\n\n${planTable()}\n\n`);
  });

  it("when it lists the limits every plan shares, then each is the one the services enforce", () => {
    expect(page).toContain(`| Live API keys per organization | ${MAX_LIVE_API_KEYS} |`);
    expect(page).toContain(`| Open event streams | ${MAX_STREAMS_PER_CREDENTIAL} per credential, ${MAX_STREAMS_PER_ORGANIZATION} per organization |`);
    expect(page).toContain(`| Operations in one batch | ${MAX_BATCH_OPERATIONS} |`);
    expect(page).toContain(`| Events in the events feed | the last ${EVENT_RETENTION_DAYS} days |`);
    // The paid plans' flag the page names is the entitlement the webhook routes need.
    expect(page).toContain("`outbound_webhooks`: the webhook endpoints");
  });
});
