import { z } from "zod";
import { describe, expect, it } from "vitest";
import { AppError, toPointer, toProblem, zodFieldErrors } from "../src/index.js";

describe("field errors", () => {
  it("when a path has / or ~, then the pointer escapes them per RFC 6901", () => {
    expect(toPointer(["a/b", "c~d", 0])).toBe("/a~1b/c~0d/0");
  });

  it("when unknown fields are sent, then each gets its own pointer", () => {
    const r = z.strictObject({ name: z.string() }).safeParse({ name: "x", colour: 1, size: 2 });
    expect(r.success).toBe(false);
    if (!r.success) {
      expect(zodFieldErrors(r.error)).toEqual([
        { pointer: "/colour", message: "is not a recognized field" },
        { pointer: "/size", message: "is not a recognized field" },
      ]);
    }
  });

  it("when the whole value is wrong, then the pointer is /", () => {
    const r = z.object({}).safeParse(7);
    if (!r.success) expect(zodFieldErrors(r.error)[0]?.pointer).toBe("/");
    expect(r.success).toBe(false);
  });
});

describe("problem objects", () => {
  it("when a 4xx is rendered, then it has type, title, status, code, detail and no request_id", () => {
    const p = toProblem(new AppError("validation_failed", "bad", { errors: [{ pointer: "/name", message: "required" }] }), "req_1");
    expect(p).toEqual({
      type: "/docs/errors#validation_failed",
      title: "Validation failed",
      status: 400,
      code: "validation_failed",
      detail: "bad",
      errors: [{ pointer: "/name", message: "required" }],
    });
  });

  it("when a 5xx is rendered, then it carries request_id", () => {
    expect(toProblem(new AppError("internal_error", "boom"), "req_9").request_id).toBe("req_9");
  });

  it("when an AppError crosses RPC, then it comes back equal", () => {
    const e = new AppError("dependency_cycle", "loop", { errors: [{ pointer: "/blocker_task_id", message: "closes a loop" }] });
    const back = AppError.fromRpc(e.toRpc());
    expect([back.code, back.status, back.detail, back.errors]).toEqual([e.code, 409, "loop", e.errors]);
  });
});
