import { type Recurrence, type RecurrenceInput, RecurrenceRule, recurrenceRuleProblems } from "@tasksvc/contracts";
import { validationError } from "@tasksvc/errors";
// rrule ships CommonJS without named ESM exports: the default import is its module object.
import rrule from "rrule";
import { z } from "zod";

const { RRule } = rrule;

const RULE_FIELDS = ["frequency", "interval", "by_weekday", "by_month_day", "end_date", "max_occurrences"] as const;
const RRULE_DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"];
const RRULE_PARTS = new Set(["FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "COUNT", "UNTIL"]);
const RRULE_FREQ: Record<number, RecurrenceRule["frequency"]> = {
  [RRule.YEARLY]: "YEARLY",
  [RRule.MONTHLY]: "MONTHLY",
  [RRule.WEEKLY]: "WEEKLY",
  [RRule.DAILY]: "DAILY",
};

/** A day-level schedule has no use for BYHOUR and the like, and ordinals (1MO) or sets (BYSETPOS) have no field to live in. */
function fieldsOfRrule(value: string): { fields: Record<string, unknown> } | { problem: string } {
  const body = value.replace(/^RRULE:/i, "");
  const given = new Map<string, string>();
  for (const part of body.split(";")) {
    const [name = "", ...rest] = part.split("=");
    const key = name.toUpperCase();
    if (!RRULE_PARTS.has(key))
      return { problem: `has ${key || "an empty part"}, which this API does not support (use FREQ, INTERVAL, BYDAY, BYMONTHDAY, COUNT, UNTIL)` };
    given.set(key, rest.join("="));
  }
  // BYDAY and UNTIL are read here, not by the library: it throws on an unknown weekday and rolls
  // an impossible date (20261399) over into a real one instead of refusing it.
  const byday = given.get("BYDAY");
  const weekdays = byday?.toUpperCase().split(",");
  if (weekdays?.some((d) => /^[+-]?\d+[A-Z]{2}$/.test(d))) return { problem: "BYDAY takes plain weekdays here (MO,TH), not ordinals such as 1MO" };
  if (weekdays?.some((d) => !RRULE_DAYS.includes(d))) return { problem: "BYDAY takes weekdays written MO, TU, WE, TH, FR, SA or SU" };
  const until = given.get("UNTIL");
  const day = until === undefined ? undefined : /^(\d{4})(\d{2})(\d{2})(T\d{6}Z?)?$/.exec(until);
  if (day === null) return { problem: "UNTIL must be a date (YYYYMMDD) or a UTC date-time (YYYYMMDDTHHMMSSZ)" };
  let o: ReturnType<typeof RRule.parseString>;
  try {
    o = RRule.parseString(body);
  } catch (e) {
    return { problem: `is not an RFC 5545 RRULE value (${e instanceof Error ? e.message : String(e)})` };
  }
  const frequency = o.freq === undefined ? undefined : RRULE_FREQ[o.freq];
  if (!frequency) return { problem: "needs FREQ=DAILY, WEEKLY, MONTHLY or YEARLY" };
  const fields: Record<string, unknown> = { frequency };
  if (o.interval !== undefined) fields["interval"] = o.interval;
  if (weekdays) fields["by_weekday"] = weekdays.map((d) => RRULE_DAYS.indexOf(d) + 1);
  if (o.bymonthday !== undefined && o.bymonthday !== null) {
    const days = Array.isArray(o.bymonthday) ? o.bymonthday : [o.bymonthday];
    if (days.length !== 1) return { problem: "BYMONTHDAY takes one day here" };
    fields["by_month_day"] = days[0];
  }
  if (o.count !== undefined && o.count !== null) fields["max_occurrences"] = o.count;
  // The calendar check is end_date's own (DateOnly), reported at rrule like every field's.
  if (day) fields["end_date"] = `${day[1]}-${day[2]}-${day[3]}`;
  return { fields };
}

const FromRrule = z.custom<RecurrenceInput & { rrule: string }>().transform((r, ctx): RecurrenceRule => {
  const { rrule: value, ...given } = r;
  const both = RULE_FIELDS.filter((k) => given[k] !== undefined);
  for (const k of both) ctx.addIssue({ code: "custom", path: [k], message: "give the rule as rrule or as fields, not both" });
  const parsed = fieldsOfRrule(value);
  if ("problem" in parsed) {
    ctx.addIssue({ code: "custom", path: ["rrule"], message: parsed.problem });
    return z.NEVER;
  }
  const checked = RecurrenceRule.safeParse({ ...given, ...parsed.fields });
  if (!checked.success) {
    for (const issue of checked.error.issues) ctx.addIssue({ code: "custom", path: ["rrule"], message: `${issue.path.join(".")} ${issue.message}` });
    return z.NEVER;
  }
  for (const [path, message] of recurrenceRuleProblems(checked.data)) ctx.addIssue({ code: "custom", path: ["rrule"], message: `${path} ${message}` });
  return both.length ? z.NEVER : checked.data;
});

export function recurrenceRule(r: RecurrenceInput, at = "/recurrence"): RecurrenceRule {
  if (r.rrule === undefined) {
    // The contract refuses a recurrence with neither (RecurrenceInput).
    if (r.frequency === undefined) throw new Error("a recurrence without frequency or rrule passed its contract");
    return { ...r, frequency: r.frequency };
  }
  const out = FromRrule.safeParse(r);
  if (!out.success) throw validationError(out.error, at, "The request body");
  return out.data;
}

/** Called first, so a rule this API cannot keep is refused before anything is looked up, and parsed once. */
export function withRecurrenceRule<B extends { recurrence?: RecurrenceInput | null | undefined }>(b: B): B {
  return b.recurrence?.rrule === undefined ? b : { ...b, recurrence: recurrenceRule(b.recurrence) };
}

export function normalizeRecurrence(input: RecurrenceInput): Recurrence {
  const r = recurrenceRule(input);
  const interval = r.interval ?? 1;
  const byWeekday = [...(r.by_weekday ?? [])].sort((a, b) => a - b);
  const parts = [`FREQ=${r.frequency}`, `INTERVAL=${interval}`];
  if (byWeekday.length) parts.push(`BYDAY=${byWeekday.map((d) => RRULE_DAYS[d - 1]).join(",")}`);
  if (r.by_month_day !== undefined) parts.push(`BYMONTHDAY=${r.by_month_day}`);
  if (r.max_occurrences !== undefined) parts.push(`COUNT=${r.max_occurrences}`);
  if (r.end_date !== undefined) parts.push(`UNTIL=${r.end_date.replaceAll("-", "")}`);
  return {
    frequency: r.frequency,
    interval,
    by_weekday: byWeekday,
    by_month_day: r.by_month_day ?? null,
    basis: r.basis ?? "SCHEDULE",
    timezone: r.timezone ?? "UTC",
    start_date: r.start_date ?? null,
    end_date: r.end_date ?? null,
    max_occurrences: r.max_occurrences ?? null,
    rollover_enabled: r.rollover_enabled ?? false,
    active: r.active ?? true,
    rrule: parts.join(";"),
  };
}
