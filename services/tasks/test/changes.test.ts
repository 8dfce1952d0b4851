import { apiTask } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { changesOf } from "../src/domain/events/changes.js";

// The bound on an event's `changes` (DESIGN.md section 20): pure logic over two tasks.

const before = apiTask("Before", { version: 1 });
const next = (overrides: Parameters<typeof apiTask>[1]) => apiTask("Before", { version: 2, ...overrides });

describe("changesOf()", () => {
  it("when the envelope with both values of every field fits in 256 KiB, then each change carries its values", () => {
    const notes = "a".repeat(60_000);
    expect(changesOf(before, next({ notes, status: "IN_PROGRESS" }))).toEqual({
      version: { from: 1, to: 2 },
      status: { from: "TODO", to: "IN_PROGRESS" },
      notes: { from: null, to: notes },
    });
  });

  it("when it would not fit, then every free-text field that changed gives its lengths, and the other fields keep their values", () => {
    const from = apiTask("Before", { version: 1, notes: "a".repeat(100_000) });
    const to = apiTask("After", { version: 2, notes: "b".repeat(99_999), description: "now", priority: "HIGH" });
    expect(changesOf(from, to)).toEqual({
      version: { from: 1, to: 2 },
      title: { from_length: 6, to_length: 5, truncated: true },
      description: { from_length: null, to_length: 3, truncated: true },
      priority: { from: null, to: "HIGH" },
      notes: { from_length: 100_000, to_length: 99_999, truncated: true },
    });
  });

  it("when lengths are given, then they count as the API's limits do: UTF-16 code units, an emoji two", () => {
    // 50,000 emoji are the 100,000 characters notes may hold: 200 KB of UTF-8, twice over with `from`.
    const notes = "\u{1F600}".repeat(50_000);
    expect(changesOf(before, next({ notes }))["notes"]).toEqual({ from_length: null, to_length: 100_000, truncated: true });
  });

  it("when control characters make the text six times its length in JSON, then that is what is measured", () => {
    // 25,000 characters: 150 KB escaped in data and as many again in `to`, over 256 KiB together.
    const notes = "\u0001".repeat(25_000);
    expect(changesOf(before, next({ notes }))["notes"]).toEqual({ from_length: null, to_length: 25_000, truncated: true });
    // The same count of plain letters is 25 KB twice: it fits, values and all.
    expect(changesOf(before, next({ notes: "a".repeat(25_000) }))["notes"]).toEqual({ from: null, to: "a".repeat(25_000) });
  });
});
