import { type Api, eventually } from "@tasksvc/testing";
import { expect } from "vitest";

// What the export tests share: asking for an export, waiting for it, fetching its file.

export interface ExportBody {
  id: string;
  status: string;
  format: string;
  include: string[];
  progress: { done: number; total: number };
  download_url: string | null;
  expires_at: string | null;
  error: { code: string; detail: string } | null;
  created_at: string;
  completed_at: string | null;
}

export async function startExport(gw: Api, token: string, body: Record<string, unknown>): Promise<ExportBody> {
  const r = await gw.post("/v1/exports", body, { token });
  expect(r.status, r.text).toBe(202);
  return r.body as ExportBody;
}

/** Polls the export until it is over; a failure fails the test with its error. */
export async function finished(gw: Api, token: string, id: string, timeoutMs = 60_000): Promise<ExportBody> {
  const over = await eventually(
    async () => {
      const r = await gw.get(`/v1/exports/${id}`, { token });
      if (r.status !== 200) throw new Error(`GET /v1/exports/${id}: ${r.status} ${r.text}`);
      return r.body.status === "succeeded" || r.body.status === "failed" ? (r.body as ExportBody) : false;
    },
    { timeoutMs, intervalMs: 100, what: `export ${id} to finish` },
  );
  expect(over.status, JSON.stringify(over)).toBe("succeeded");
  return over;
}

/** The link, asked of this stack's gateway (its public origin may be another address of the same process). */
export function fetchLink(gatewayUrl: string, url: string): Promise<Response> {
  const u = new URL(url);
  return fetch(new URL(u.pathname + u.search, gatewayUrl));
}

export async function fileOf(gatewayUrl: string, e: ExportBody): Promise<string> {
  expect(e.download_url, JSON.stringify(e)).toEqual(expect.any(String));
  const r = await fetchLink(gatewayUrl, e.download_url ?? "");
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return text;
}

export type Line = { object: string } & Record<string, unknown>;

/** Every line is one JSON object with an `object` field; the file ends with a line end and has no blank line. */
export function linesOf(text: string): Line[] {
  if (text === "") return [];
  expect(text.endsWith("\n"), "the file ends with a line end").toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((l) => {
      const o = JSON.parse(l) as Line;
      expect(typeof o.object, l).toBe("string");
      return o;
    });
}

/** The line's object as the API shows it: without its `object` field. */
export const withoutObject = ({ object: _object, ...rest }: Line) => rest;
