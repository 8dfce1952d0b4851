import { randomBytes } from "node:crypto";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// A file name with a bidirectional override displays as another name: `invoice\u202Egpj.exe`
// reads "invoiceexe.jpg" in a list or a save dialog. File names refuse those controls.
const { gw, f } = e2eContext();

const BIDI_CONTROLS = ["\u202A", "\u202B", "\u202C", "\u202D", "\u202E", "\u2066", "\u2067", "\u2068", "\u2069"];

async function task(t: Tenant): Promise<string> {
  const r = await gw.post("/v1/tasks", { title: "with files" }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

describe("bidirectional controls in file names", () => {
  it("when upload-start or register names a file with a bidirectional control, then 400 validation_failed naming /file_name", async () => {
    const t = await f.tenant();
    const id = await task(t);
    for (const c of BIDI_CONTROLS) {
      const file_name = `invoice${c}gpj.exe`;
      const label = `U+${c.codePointAt(0)?.toString(16).toUpperCase()}`;
      const start = await gw.post(`/v1/tasks/${id}/attachments/uploads`, { file_name, content_type: "image/jpeg", size: 10 }, { token: t.apiKey });
      expect(start.status, `${label} start → ${start.text}`).toBe(400);
      expect(start.body.code).toBe("validation_failed");
      expect(start.body.errors, label).toEqual([expect.objectContaining({ pointer: "/file_name", message: expect.stringContaining("bidirectional") })]);
      const register = await gw.post(
        `/v1/tasks/${id}/attachments`,
        { file_name, file_key: "att/whatever", content_type: "image/jpeg", size: 10 },
        { token: t.apiKey },
      );
      expect(register.status, `${label} register → ${register.text}`).toBe(400);
      expect(register.body.errors, label).toEqual([expect.objectContaining({ pointer: "/file_name" })]);
    }
  });

  it("when a file name carries the direction marks LRM or RLM, then it is uploaded and registered as given", async () => {
    const t = await f.tenant();
    const id = await task(t);
    const file_name = "\u05D3\u05D5\u05D7\u200F.pdf \u200Ereport";
    const bytes = randomBytes(32);
    const s = await gw.post(`/v1/tasks/${id}/attachments/uploads`, { file_name, content_type: "application/pdf", size: bytes.length }, { token: t.apiKey });
    expect(s.status, s.text).toBe(201);
    const put = await fetch(s.body.upload_url, { method: "PUT", body: bytes, headers: { "content-type": "application/pdf" } });
    expect(put.status, await put.text()).toBe(200);
    const reg = await gw.post(
      `/v1/tasks/${id}/attachments`,
      { file_name, file_key: s.body.file_key, content_type: "application/pdf", size: bytes.length },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(201);
    expect(reg.body.file_name).toBe(file_name);
  });

  it("when a task title carries a bidirectional control, then it is kept (the rule is for file names only)", async () => {
    const t = await f.tenant();
    const title = "\u2067\u05E9\u05DC\u05D5\u05DD\u2069 world";
    const r = await gw.post("/v1/tasks", { title }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    expect(r.body.title).toBe(title);
  });
});
