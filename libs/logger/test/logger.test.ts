import { describe, expect, it } from "vitest";
import { createLogger, type LoggerConfig } from "../src/index.js";

const SECRET = "svc_live_neverInALog0000000000000000000000000000";
// ESC [ … m: a colour sequence.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`);

/** A logger writing into a string, as a test destination does. */
function capture(cfg: Omit<LoggerConfig, "destination">) {
  let text = "";
  const log = createLogger({
    ...cfg,
    destination: {
      write(s: string) {
        text += s;
      },
    },
  });
  return { log, text: () => text };
}

/** Every line a request can carry a credential in: a log call's fields, nested, and headers. */
function logSecrets(log: ReturnType<typeof createLogger>) {
  log.info({ api_key: SECRET, headers: { authorization: `Bearer ${SECRET}` }, body: { key: SECRET, secret: SECRET } }, "credential here");
  log.child({ request_id: "req_1" }).warn({ authorization: `Bearer ${SECRET}`, access_token: SECRET }, "and here");
}

describe("json", () => {
  it("when no format is given, then each line is one JSON object with the service and a level number", () => {
    const { log, text } = capture({ service: "gateway" });
    log.info({ method: "GET", url: "/v1/tasks", status: 200, ms: 4, request_id: "req_1" }, "request");
    const lines = text().trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ level: 30, service: "gateway", msg: "request", method: "GET", status: 200, request_id: "req_1" });
  });

  it("when format is json, then it is the same", () => {
    const { log, text } = capture({ service: "keys", format: "json" });
    log.warn("careful");
    expect(JSON.parse(text())).toMatchObject({ level: 40, service: "keys", msg: "careful" });
  });

  it("when a credential is logged, then the JSON has [redacted] instead", () => {
    const { log, text } = capture({ service: "gateway", format: "json" });
    logSecrets(log);
    expect(text()).not.toContain(SECRET);
    expect(text()).toContain("[redacted]");
    for (const l of text().trimEnd().split("\n")) expect(() => JSON.parse(l)).not.toThrow();
  });
});

describe("pretty", () => {
  it("when a line is written, then it has the time, the level name, the service and the message", () => {
    const { log, text } = capture({ service: "keys", format: "pretty", colorize: false });
    log.info("listening");
    log.error("it broke");
    expect(text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO keys: listening\n\d\d:\d\d:\d\d\.\d{3} ERROR keys: it broke\n$/);
    expect(text()).not.toContain('"level"');
  });

  it("when the gateway writes its access line, then it is one line: method, path, status, ms, organization, request id", () => {
    const { log, text } = capture({ service: "gateway", format: "pretty", colorize: false });
    log.child({ request_id: "req_01ABC" }).info({ method: "POST", url: "/v1/tasks", status: 201, ms: 12, organization_id: "org_abc" }, "request");
    expect(text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO gateway: POST \/v1\/tasks 201 12ms org_abc req_01ABC\n$/);
  });

  it("when the access line has no organization (no credential), then it is left out", () => {
    const { log, text } = capture({ service: "gateway", format: "pretty", colorize: false });
    log.child({ request_id: "req_2" }).info({ method: "GET", url: "/v1/organizations", status: 401, ms: 1 }, "request");
    expect(text()).toMatch(/ INFO gateway: GET \/v1\/organizations 401 1ms req_2\n$/);
  });

  it("when another line has fields, then they follow the message as compact JSON on the same line", () => {
    const { log, text } = capture({ service: "keys", format: "pretty", colorize: false });
    log.child({ request_id: "req_3" }).info({ op: "keys.listOrganizations", ok: true, ms: 2, organization_id: "org_x" }, "rpc handled");
    expect(text()).toMatch(/ INFO keys: rpc handled \{"request_id":"req_3","op":"keys.listOrganizations","ok":true,"ms":2,"organization_id":"org_x"\}\n$/);
  });

  it("when an error is logged, then its stack follows the line", () => {
    const { log, text } = capture({ service: "tasks", format: "pretty", colorize: false });
    log.error({ err: new Error("boom") }, "failed");
    expect(text()).toMatch(/ ERROR tasks: failed/);
    expect(text()).toMatch(/Error: boom\n\s+at /);
  });

  it("when the level filters a line out, then nothing is written", () => {
    const { log, text } = capture({ service: "tasks", format: "pretty", level: "warn", colorize: false });
    log.info("quiet");
    expect(text()).toBe("");
  });

  it("when colours are asked for, then the level is coloured; when not, there is no escape sequence", () => {
    const coloured = capture({ service: "boards", format: "pretty", colorize: true });
    coloured.log.info("hello");
    expect(coloured.text()).toMatch(ANSI);
    const plain = capture({ service: "boards", format: "pretty", colorize: false });
    plain.log.info("hello");
    expect(plain.text()).not.toMatch(ANSI);
  });

  it.each([false, true])("when a credential is logged (colours %s), then pretty output has [redacted] instead", (colorize) => {
    const { log, text } = capture({ service: "gateway", format: "pretty", colorize });
    logSecrets(log);
    expect(text()).not.toContain(SECRET);
    expect(text()).not.toContain("neverInALog");
    expect(text()).toContain("[redacted]");
  });
});
