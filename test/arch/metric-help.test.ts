import { ERROR_CODES } from "@tasksvc/contracts";
import { registry } from "@tasksvc/telemetry";
import { describe, expect, it } from "vitest";

/** A word such as `quota_exhausted`: how a help text names an error code (or any other label value). */
const SNAKE_CASE = /\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g;
const codes = new Set<string>(ERROR_CODES);

describe("metric help texts", () => {
  it("when a family is labelled by error code or its help speaks of codes, then every code its help names is in the error catalog", () => {
    const families = registry.getMetricsAsArray().filter((m) => m.name.startsWith("tasksvc_"));
    const byCode = families.filter((m) => {
      const labels: unknown = "labelNames" in m ? m.labelNames : [];
      return (Array.isArray(labels) && labels.includes("code")) || /\bcodes?\b/.test(m.help);
    });
    expect(byCode.map((m) => m.name)).toEqual(
      expect.arrayContaining(["tasksvc_gateway_refusals_total", "tasksvc_rpc_client_duration_seconds", "tasksvc_rpc_server_duration_seconds"]),
    );
    const named = byCode.flatMap((m) => [...m.help.matchAll(SNAKE_CASE)].map(([word]) => ({ family: m.name, word })));
    expect(named.map((n) => n.word)).toEqual(expect.arrayContaining(["rate_limited", "quota_exhausted"]));
    const unknown = named.filter((n) => !codes.has(n.word)).map((n) => `${n.family}: ${n.word}`);
    expect(unknown, "codes named in help texts that the catalog (libs/contracts/src/codes.ts) lacks").toEqual([]);
  });
});
