import { RecurrenceInput as RecurrenceInputSchema, type RecurrenceInput } from "@tasksvc/contracts";
import { isAppError } from "@tasksvc/errors";
import { describe, expect, it } from "vitest";
import {
  type Day,
  dueSlot,
  firstSlot,
  localDay,
  nextDayStart,
  ruleOf,
  slotAfter,
  slotAfterCompletion,
  slotAfterDone,
  slotAtDone,
} from "../src/domain/recurrence/slots.js";
import { normalizeRecurrence, recurrenceRule } from "../src/domain/recurrence/rrule.js";

// Issue 16: the days a recurring task's occurrences fall on, for every field of the recurrence
// object. Pure functions of a rule and a day: no clock, no sleeps.
const rule = (r: RecurrenceInput, start: Day = "2026-11-01") => ruleOf(normalizeRecurrence(r), start);
function slots(r: RecurrenceInput, from: Day, n: number, start?: Day): Array<Day | null> {
  const ru = rule(r, start);
  const out: Array<Day | null> = [];
  let day: Day | null = from;
  for (let i = 0; i < n && day !== null; i++) out.push((day = slotAfter(ru, day)));
  return out;
}

describe("recurrence slots", () => {
  it("when the rule is daily, weekly on weekdays, monthly or yearly, then each next slot is the rule's", () => {
    expect(slots({ frequency: "DAILY", interval: 2 }, "2026-11-01", 3)).toEqual(["2026-11-03", "2026-11-05", "2026-11-07"]);
    // ISO weekdays: 1 Monday, 3 Wednesday. 2026-11-23 is a Monday.
    expect(slots({ frequency: "WEEKLY", by_weekday: [3, 1] }, "2026-11-23", 4, "2026-11-23")).toEqual(["2026-11-25", "2026-11-30", "2026-12-02", "2026-12-07"]);
    expect(slots({ frequency: "WEEKLY", interval: 2 }, "2026-11-23", 2, "2026-11-23")).toEqual(["2026-12-07", "2026-12-21"]);
    expect(slots({ frequency: "MONTHLY", by_month_day: 15 }, "2026-11-01", 2)).toEqual(["2026-11-15", "2026-12-15"]);
    expect(slots({ frequency: "YEARLY", start_date: "2026-03-10" }, "2026-03-10", 2)).toEqual(["2027-03-10", "2028-03-10"]);
  });

  it("when a month has no such day, then its last day is the slot (Jan 31 → Feb 28, Feb 29 → Feb 28)", () => {
    expect(slots({ frequency: "MONTHLY", by_month_day: 31, start_date: "2026-01-31" }, "2026-01-31", 4)).toEqual([
      "2026-02-28",
      "2026-03-31",
      "2026-04-30",
      "2026-05-31",
    ]);
    expect(slots({ frequency: "MONTHLY", by_month_day: 30, start_date: "2028-01-30" }, "2028-01-30", 2)).toEqual(["2028-02-29", "2028-03-30"]);
    expect(slots({ frequency: "YEARLY", by_month_day: 29, start_date: "2024-02-29" }, "2024-02-29", 4)).toEqual([
      "2025-02-28",
      "2026-02-28",
      "2027-02-28",
      "2028-02-29",
    ]);
  });

  it("when the rule has an end date or a number of occurrences, then no slot comes after it", () => {
    expect(slots({ frequency: "DAILY", start_date: "2026-11-01", end_date: "2026-11-03" }, "2026-11-01", 5)).toEqual(["2026-11-02", "2026-11-03", null]);
    // max_occurrences counts the first day: 3 occurrences are Nov 1, 2 and 3.
    expect(slots({ frequency: "DAILY", start_date: "2026-11-01", max_occurrences: 3 }, "2026-11-01", 5)).toEqual(["2026-11-02", "2026-11-03", null]);
  });

  it("when the scheduler was down for weeks, then one slot is due (the latest), not one per missed day, and none twice", () => {
    const daily = rule({ frequency: "DAILY", start_date: "2026-11-01" });
    expect(dueSlot(daily, "2026-11-02", "2026-11-20")).toBe("2026-11-20");
    expect(dueSlot(daily, "2026-11-20", "2026-11-20")).toBeNull();
    expect(dueSlot(daily, null, "2026-10-31")).toBeNull();
    expect(dueSlot(daily, null, "2026-11-01")).toBe("2026-11-01");
    const weekly = rule({ frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02" });
    expect(dueSlot(weekly, "2026-11-02", "2026-11-22")).toBe("2026-11-16");
  });

  it("when a zone changes its clocks, then the local day turns at local midnight, and a daily series gets one slot per local day", () => {
    // New York springs forward on 2026-03-08 (EST → EDT) and falls back on 2026-11-01 (EDT → EST).
    const ny = "America/New_York";
    expect(localDay(new Date("2026-03-08T04:59:00Z"), ny)).toBe("2026-03-07");
    expect(localDay(new Date("2026-03-08T05:00:00Z"), ny)).toBe("2026-03-08");
    expect(localDay(new Date("2026-03-09T03:59:00Z"), ny)).toBe("2026-03-08"); // 23:59 EDT
    expect(localDay(new Date("2026-03-09T04:00:00Z"), ny)).toBe("2026-03-09");
    expect(localDay(new Date("2026-11-02T04:59:00Z"), ny)).toBe("2026-11-01"); // 23:59 EST
    // Every 15 minutes across both changes in Berlin: the due slot changes exactly at each local
    // midnight, once a day, never skipping or repeating a day.
    const berlin = "Europe/Berlin";
    const daily = rule({ frequency: "DAILY", timezone: berlin, start_date: "2026-03-27" });
    for (const [from, to] of [
      ["2026-03-27T00:00:00Z", "2026-03-31T00:00:00Z"],
      ["2026-10-23T00:00:00Z", "2026-10-27T00:00:00Z"],
    ] as const) {
      const changes: string[] = [];
      let last: Day | null = null;
      for (let t = Date.parse(from); t < Date.parse(to); t += 15 * 60_000) {
        const due = dueSlot(daily, last, localDay(new Date(t), berlin));
        if (due !== null) {
          changes.push(`${due}@${new Date(t).toISOString().slice(0, 16)}`);
          last = due;
        }
      }
      const days = changes.map((c) => c.slice(0, 10));
      expect(new Set(days).size, changes.join(" ")).toBe(days.length);
      for (const c of changes.slice(1)) {
        // Local midnight is 23:00Z in winter (CET) and 22:00Z in summer (CEST).
        expect(c.slice(-5), changes.join(" ")).toMatch(/^(22|23):00$/);
      }
    }
  });

  it("when the scheduler asks when the next day begins in a zone, then it is the local midnight (or the first instant of a day a clock change skips into), to the second", () => {
    const cases: Array<[string, string, string]> = [
      ["2026-11-24T10:00:00Z", "UTC", "2026-11-25T00:00:00Z"],
      ["2026-11-24T10:00:00Z", "Europe/Berlin", "2026-11-24T23:00:00Z"], // CET
      ["2026-03-28T12:00:00Z", "Europe/Berlin", "2026-03-28T23:00:00Z"], // the night the clocks go forward
      ["2026-03-29T12:00:00Z", "Europe/Berlin", "2026-03-29T22:00:00Z"], // the first CEST midnight
      ["2026-11-01T02:00:00Z", "America/New_York", "2026-11-01T04:00:00Z"], // 22:00 EDT; midnight still EDT
      ["2026-11-01T12:00:00Z", "America/New_York", "2026-11-02T05:00:00Z"], // after falling back: EST
      ["2026-11-24T10:00:00Z", "Pacific/Auckland", "2026-11-24T11:00:00Z"], // UTC+13
      ["2026-11-24T09:59:59.5Z", "Pacific/Kiritimati", "2026-11-24T10:00:00Z"], // UTC+14: half a second to midnight
      ["2026-11-24T10:00:00Z", "Pacific/Kiritimati", "2026-11-25T10:00:00Z"], // the 25th has just begun there
      ["2026-11-24T10:00:00Z", "Pacific/Pago_Pago", "2026-11-24T11:00:00Z"], // UTC-11: 23:00 on the 23rd there
      // Havana springs forward at midnight (00:00 → 01:00, 2026-03-08): that day begins at 01:00 there.
      ["2026-03-07T12:00:00Z", "America/Havana", "2026-03-08T05:00:00Z"],
    ];
    for (const [now, zone, expected] of cases) {
      const at = nextDayStart(new Date(now), zone);
      expect(at.toISOString(), `${now} in ${zone}`).toBe(new Date(expected).toISOString());
      expect(localDay(new Date(at.getTime() - 1000), zone) < localDay(at, zone)).toBe(true);
    }
  });

  it("when the basis is completion, then the next is due one interval after the completion day, on the rule's weekday or month day if it has one", () => {
    const r = (x: RecurrenceInput) => normalizeRecurrence({ basis: "COMPLETION", ...x });
    expect(slotAfterCompletion(r({ frequency: "DAILY", interval: 3 }), "2026-11-24")).toBe("2026-11-27");
    expect(slotAfterCompletion(r({ frequency: "MONTHLY" }), "2026-01-31")).toBe("2026-02-28");
    expect(slotAfterCompletion(r({ frequency: "WEEKLY" }), "2026-11-25")).toBe("2026-12-02");
    // Completed on a Wednesday; one week on is Wednesday Dec 2; the rule's Friday after it is Dec 4.
    expect(slotAfterCompletion(r({ frequency: "WEEKLY", by_weekday: [5] }), "2026-11-25")).toBe("2026-12-04");
    expect(slotAfterCompletion(r({ frequency: "MONTHLY", by_month_day: 10 }), "2026-11-24")).toBe("2027-01-10");
  });

  it("when a series begins, then its head's slot is the rule's first day from start_date, else from the day it began", () => {
    const n = normalizeRecurrence;
    // 2026-12-02 is a Wednesday: the first Monday from it is Dec 7.
    expect(firstSlot(n({ frequency: "WEEKLY", by_weekday: [1], start_date: "2026-12-02" }), "2026-11-25")).toBe("2026-12-07");
    expect(firstSlot(n({ frequency: "DAILY" }), "2026-11-25")).toBe("2026-11-25");
    expect(firstSlot(n({ frequency: "MONTHLY", by_month_day: 31, start_date: "2027-02-01" }), "2026-11-25")).toBe("2027-02-28");
    expect(firstSlot(n({ frequency: "WEEKLY", by_weekday: [1], start_date: "2026-12-02", end_date: "2026-12-04" }), "2026-11-25")).toBeNull();
  });

  it("when the latest occurrence is done, then the next slot is one interval after that day (COMPLETION), or the rule's first after it not before today (SCHEDULE): at most one, never a backlog", () => {
    const n = (x: RecurrenceInput) => normalizeRecurrence(x);
    const completion = n({ frequency: "DAILY", interval: 3, basis: "COMPLETION", start_date: "2026-11-01" });
    expect(slotAtDone(completion, "2026-11-01", "2026-11-01", 0, "2026-11-05")).toBe("2026-11-08");
    // Done before its own day: one interval after that day, never the same slot again.
    expect(slotAtDone(completion, "2026-11-01", "2026-11-08", 1, "2026-11-05")).toBe("2026-11-11");
    expect(slotAfterDone(completion, "2026-11-08", 1, "2026-11-05")).toBe("2026-11-11");
    expect(slotAfterDone(completion, "2026-11-08", 1, "2026-11-06")).toBe("2026-11-09");
    // Mondays from Nov 2 (2026-11-02 is a Monday).
    const weekly = n({ frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02" });
    expect(slotAtDone(weekly, "2026-11-01", "2026-11-02", 0, "2026-11-01"), "done early: the next shows").toBe("2026-11-09");
    expect(slotAtDone(weekly, "2026-11-01", "2026-11-02", 0, "2026-11-09"), "done on the next slot's day").toBe("2026-11-09");
    expect(slotAtDone(weekly, "2026-11-01", "2026-11-09", 1, "2026-11-25"), "long overdue: one, from today on").toBe("2026-11-30");
    // Paused, ended, counted out: none.
    expect(slotAtDone({ ...weekly, active: false }, "2026-11-01", "2026-11-02", 0, "2026-11-03")).toBeNull();
    expect(slotAtDone({ ...completion, active: false }, "2026-11-01", "2026-11-01", 0, "2026-11-03")).toBeNull();
    expect(
      slotAtDone(n({ frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02", end_date: "2026-11-15" }), "2026-11-01", "2026-11-09", 1, "2026-11-10"),
    ).toBeNull();
    expect(
      slotAtDone(n({ frequency: "WEEKLY", by_weekday: [1], start_date: "2026-11-02", max_occurrences: 2 }), "2026-11-01", "2026-11-09", 1, "2026-11-10"),
    ).toBeNull();
    expect(slotAtDone({ ...completion, end_date: "2026-11-07" }, "2026-11-01", "2026-11-01", 0, "2026-11-05")).toBeNull();
    expect(slotAtDone({ ...completion, max_occurrences: 2 }, "2026-11-01", "2026-11-08", 1, "2026-11-09")).toBeNull();
    expect(slotAtDone({ ...completion, max_occurrences: 3 }, "2026-11-01", "2026-11-08", 1, "2026-11-09")).toBe("2026-11-12");
  });
});

describe("a rule given as rrule (RFC 5545) on input", () => {
  // The contract's check (the gateway's), then the service's reading of an rrule: a problem
  // either finds is named by its path in the recurrence object.
  const parse = (v: unknown) => {
    const r = RecurrenceInputSchema.safeParse(v);
    if (!r.success) return r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    try {
      return normalizeRecurrence(recurrenceRule(r.data, ""));
    } catch (e) {
      if (!isAppError(e) || e.code !== "validation_failed") throw e;
      return (e.errors ?? []).map((f) => `${f.pointer.slice(1).replaceAll("/", ".")}: ${f.message}`);
    }
  };
  it("when rrule states the rule, then it becomes the same fields a client could have sent, and the same slots", () => {
    expect(parse({ rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;COUNT=5", timezone: "Europe/Berlin" })).toEqual(
      normalizeRecurrence({ frequency: "WEEKLY", interval: 2, by_weekday: [1, 4], max_occurrences: 5, timezone: "Europe/Berlin" }),
    );
    expect(parse({ rrule: "RRULE:FREQ=MONTHLY;BYMONTHDAY=31;UNTIL=20270101T000000Z" })).toEqual(
      normalizeRecurrence({ frequency: "MONTHLY", by_month_day: 31, end_date: "2027-01-01" }),
    );
  });
  it("when rrule has what the fields cannot say, clashes with them, or breaks a rule of theirs, then the problem is named at rrule or at the field", () => {
    expect(parse({ rrule: "FREQ=MONTHLY;BYDAY=1MO" })).toEqual(["rrule: BYDAY takes plain weekdays here (MO,TH), not ordinals such as 1MO"]);
    expect(parse({ rrule: "FREQ=DAILY;BYHOUR=9" })).toEqual([expect.stringMatching(/^rrule: has BYHOUR/)]);
    expect(parse({ rrule: "FREQ=HOURLY" })).toEqual(["rrule: needs FREQ=DAILY, WEEKLY, MONTHLY or YEARLY"]);
    expect(parse({ rrule: "FREQ=WEEKLY;INTERVAL=999" })).toEqual([expect.stringMatching(/^rrule: interval /)]);
    expect(parse({ rrule: "FREQ=DAILY;BYDAY=MO" })).toEqual(["rrule: by_weekday applies only to frequency WEEKLY"]);
    expect(parse({ rrule: "FREQ=DAILY", frequency: "DAILY" })).toEqual(["frequency: give the rule as rrule or as fields, not both"]);
    expect(parse({})).toEqual(["frequency: is required (or give the rule as rrule)"]);
    // Read here, not by the library, which throws on an unknown weekday and rolls an impossible
    // date into a real one.
    expect(parse({ rrule: "FREQ=WEEKLY;BYDAY=XX" })).toEqual(["rrule: BYDAY takes weekdays written MO, TU, WE, TH, FR, SA or SU"]);
    expect(parse({ rrule: "FREQ=DAILY;UNTIL=20261399" })).toEqual(["rrule: end_date must be a calendar day written YYYY-MM-DD"]);
    expect(parse({ rrule: "FREQ=DAILY;UNTIL=2026" })).toEqual([expect.stringMatching(/^rrule: UNTIL must be a date/)]);
    expect(parse({ rrule: "FREQ=DAILY;UNTIL=00010101" })).toEqual([expect.stringMatching(/^rrule: end_date must lie between/)]);
  });
  it("when the tasks service refuses an rrule, then it is the 400 the gateway gives an invalid body, naming /recurrence/rrule", () => {
    const refusal = (() => {
      try {
        return recurrenceRule({ rrule: "FREQ=DAILY;BYHOUR=9", timezone: "UTC" });
      } catch (e) {
        return e;
      }
    })();
    expect(isAppError(refusal) && refusal.toRpc()).toEqual({
      status: 400,
      code: "validation_failed",
      detail: expect.stringMatching(/^The request body is invalid: \/recurrence\/rrule has BYHOUR, which this API does not support/),
      errors: [{ pointer: "/recurrence/rrule", message: expect.stringMatching(/^has BYHOUR/) }],
    });
    // The contract leaves an rrule to the service, as text; a rule given as fields passes as it is.
    expect(RecurrenceInputSchema.safeParse({ rrule: "FREQ=DAILY;BYHOUR=9" }).success).toBe(true);
    expect(recurrenceRule({ frequency: "DAILY", interval: 2 })).toEqual({ frequency: "DAILY", interval: 2 });
  });
});
