import { existsSync } from "node:fs";
import { factories, gatewayUrl, problemOf } from "@tasksvc/testing";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

// /docs in a real headless browser (Debian's Chromium, driven by playwright-core): the
// reference UI loads from the gateway alone, shows the Task schema and the operations, and its
// "Try it out" calls the running gateway with a key given to Authorize.
const stack = inject("stack");
// The gateway's base URL (PUBLIC_BASE_URL unset: localhost on its port), where a user opens /docs.
// Its Servers box names `/`, so that "Try it out" calls the origin the page came from, whatever
// name it was opened under (`byAddress`: as through a tunnel or a port mapping).
const port = new URL(gatewayUrl(stack)).port;
const gateway = `http://localhost:${port}`;
const byAddress = `http://127.0.0.1:${port}`;
const f = factories(stack);
const CHROMIUM = process.env["CHROMIUM_PATH"] ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
let browser: Browser;
/** A page's own waits (the reference drawn, up to 15 s; the live answer, up to 10 s) outlast the suite's 20 s default on a busy machine. */
const BROWSER_TEST_MS = 60_000;

beforeAll(async () => {
  if (!CHROMIUM) throw new Error("Chromium is not installed: `make tools` installs it (apt-get install chromium), or set CHROMIUM_PATH");
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
});
afterAll(async () => {
  await browser?.close();
  await f.close();
});

/**
 * Lets the page reach `origin` only, and answers what it tried to reach elsewhere (aborted): no
 * CDN, fonts or validator service, and no other name of the gateway.
 */
async function onlyFrom(page: Page, origin: string): Promise<string[]> {
  const elsewhere: string[] = [];
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
    elsewhere.push(url);
    return route.abort();
  });
  return elsewhere;
}

/**
 * Authorizes with `token`, then uses Try it out on GET /v1/organizations: answers the live
 * response's text once its status is 200 (a network or cross-origin failure has no 200).
 */
async function tryListOrganizations(page: Page, token: string): Promise<string> {
  await page.locator("button.authorize").first().click();
  await page.locator(".auth-container input").first().fill(token);
  await page.locator(".auth-btn-wrapper button.authorize").first().click();
  await page.locator(".auth-btn-wrapper button.btn-done").first().click();
  const list = page.locator("#operations-Organizations-listOrganizations");
  await list.locator(".opblock-summary").first().click();
  await list.locator("button.try-out__btn").click();
  await list.locator("button.execute").click();
  const status = list.locator(".live-responses-table tbody .response-col_status").first();
  await status.waitFor({ timeout: 10_000 });
  const answered = (await list.locator(".live-responses-table").textContent()) ?? "";
  expect(await status.textContent(), answered).toContain("200");
  return answered;
}

/**
 * Opens /docs from `origin` as a new organization's user would, letting the page reach that origin
 * only; runs `check`, then expects nothing tried elsewhere and no error in the page.
 */
async function onDocsPage(origin: string, check: (page: Page, t: Awaited<ReturnType<typeof f.tenant>>) => Promise<void>): Promise<void> {
  const t = await f.tenant();
  const page = await browser.newPage();
  const elsewhere = await onlyFrom(page, origin);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    await page.goto(`${origin}/docs`, { waitUntil: "load" });
    await check(page, t);
    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
  } finally {
    await page.close();
  }
}

describe("/docs", () => {
  it(
    "when opened, then the reference loads from the gateway alone, shows the Task schema and the operations, and Try it out calls the gateway",
    async () => {
      await onDocsPage(gateway, async (page, t) => {
        // The operations of the Tasks tag, and the schemas section naming Task.
        const create = page.locator("#operations-Tasks-createTask");
        await create.waitFor({ timeout: 15_000 });
        await expect(create.textContent()).resolves.toContain("/v1/tasks");
        await expect(page.locator("#operations-Tasks-listTasks").count()).resolves.toBe(1);
        // OpenAPI 3.1 schemas render as JSON Schema 2020-12 articles under "Schemas", titled by name.
        const taskModel = page.locator(".models article.json-schema-2020-12", {
          has: page.locator(".json-schema-2020-12__title", { hasText: /^Task$/ }),
        });
        await taskModel.first().waitFor({ timeout: 10_000 });
        await taskModel.first().locator("button.json-schema-2020-12-accordion").first().click();
        await expect(taskModel.first().textContent()).resolves.toContain("story_points");

        await expect(tryListOrganizations(page, t.apiKey)).resolves.toContain(t.organizationId);
      });
    },
    BROWSER_TEST_MS,
  );

  it(
    "when opened, then placeholders such as T-<n> show as written, the Servers box names this gateway, and createTask's example body is the document's",
    async () => {
      const doc = (await (await fetch(`${gateway}/v1/openapi.json`)).json()) as {
        paths: Record<string, Record<string, { requestBody?: { content: Record<string, { example?: unknown }> } }>>;
      };
      const page = await browser.newPage();
      try {
        await page.goto(`${gateway}/docs`, { waitUntil: "load" });
        const create = page.locator("#operations-Tasks-createTask");
        await create.waitFor({ timeout: 15_000 });
        // Markdown would take <n> for an HTML tag and drop it: the tag's description and the 201's.
        await expect(page.locator("#operations-tag-Tasks").textContent()).resolves.toContain("Tasks numbered T-<n> per organization");
        // The origin the page came from: "/", which the browser resolves against the page's URL.
        await expect(page.locator(".servers select option").first().getAttribute("value")).resolves.toBe("/");
        await expect(page.locator(".servers select option").count()).resolves.toBe(1);
        await create.locator(".opblock-summary").first().click();
        const created = create.locator(".responses-table tr.response[data-code='201']");
        await created.waitFor({ timeout: 10_000 });
        await expect(created.locator(".response-col_description").first().textContent()).resolves.toContain("numbered T-<n> per organization");
        // The example body shown (and prefilled by Try it out) is the one a test sends as is.
        const example = create.locator(".opblock-section-request-body .body-param__example, .opblock-section-request-body .highlight-code").first();
        await example.waitFor({ timeout: 10_000 });
        expect(JSON.parse((await example.textContent()) ?? "")).toEqual(doc.paths["/v1/tasks"]?.["post"]?.requestBody?.content["application/json"]?.example);
      } finally {
        await page.close();
      }
    },
    BROWSER_TEST_MS,
  );

  it(
    "when opened by address instead of name (127.0.0.1, as through a tunnel or a port mapping), then Try it out calls that same origin and answers 200, not a cross-origin failure",
    async () => {
      await onDocsPage(byAddress, async (page, t) => {
        await page.locator("#operations-Organizations-listOrganizations").waitFor({ timeout: 15_000 });
        await expect(tryListOrganizations(page, t.apiKey)).resolves.toContain(t.organizationId);
      });
    },
    BROWSER_TEST_MS,
  );

  it("when a problem's type is followed, then the errors page has that code's row", async () => {
    const r = await fetch(`${gateway}/v1/tasks`);
    const problem = await problemOf(r);
    expect(problem.type).toBe(`${gateway}/docs/errors#missing_credentials`);
    const page = await browser.newPage();
    try {
      await page.goto(problem.type, { waitUntil: "load" });
      const row = page.locator("tr#missing_credentials");
      await expect(row.count()).resolves.toBe(1);
      await expect(row.textContent()).resolves.toContain("401");
      await expect(page.locator("h2#input-rules").count()).resolves.toBe(1);
    } finally {
      await page.close();
    }
  });
});
