import { z } from "zod";
import { Label } from "./common.js";
import { DateOnly } from "./dates.js";

// A task's recurrence (the value sets and rules are ours, decision 0008).

export const RecurrenceFrequency = z.enum(["DAILY", "WEEKLY", "MONTHLY", "YEARLY"]);
export const RecurrenceBasis = z.enum(["SCHEDULE", "COMPLETION"]);

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const DOC = {
  frequency: { description: "The unit it repeats by.", examples: ["WEEKLY"] },
  interval: { description: "Every how many units (1 = every week for WEEKLY).", examples: [1] },
  by_weekday: { description: "On which weekdays (WEEKLY), 1 = Monday … 7 = Sunday.", examples: [[1, 4]] },
  by_month_day: { description: "On which day of the month (MONTHLY).", examples: [15] },
  basis: { description: "Whether the next occurrence counts from the schedule or from the last completion.", examples: ["SCHEDULE"] },
  timezone: { description: "The IANA time zone its days are counted in.", examples: ["Europe/Paris"] },
  start_date: { description: "The first day it may occur (YYYY-MM-DD).", examples: ["2026-11-23"] },
  end_date: { description: "The last day it may occur (YYYY-MM-DD); open-ended when absent or null.", examples: ["2027-06-30"] },
  max_occurrences: { description: "How many times at most; unlimited when absent or null.", examples: [10] },
  rollover_enabled: {
    description:
      "Whether an occurrence still unfinished after its day goes onto its owner's daily board for each following day, until it is done or the next occurrence comes.",
    examples: [false],
  },
  active: { description: "Whether the recurrence is running.", examples: [true] },
  rrule: { description: "The same rule as an RFC 5545 RRULE string.", examples: ["FREQ=WEEKLY;INTERVAL=1;BYDAY=MO,TH"] },
};

const RecurrenceFields = {
  frequency: RecurrenceFrequency.meta(DOC.frequency),
  interval: z.number().int().min(1).max(365).meta(DOC.interval),
  by_weekday: z
    .array(z.number().int().min(1).max(7))
    .min(1)
    .max(7)
    .refine((a) => new Set(a).size === a.length, { message: "must not repeat a weekday" })
    .meta(DOC.by_weekday),
  /** A month without that day uses its last day. */
  by_month_day: z.number().int().min(1).max(31).meta(DOC.by_month_day),
  basis: RecurrenceBasis.meta(DOC.basis),
  timezone: Label.min(1).max(64).refine(isTimeZone, { message: "must be an IANA time zone such as Europe/Berlin" }).meta(DOC.timezone),
  start_date: DateOnly.meta(DOC.start_date),
  end_date: DateOnly.meta(DOC.end_date),
  max_occurrences: z.number().int().min(1).max(10_000).meta(DOC.max_occurrences),
  rollover_enabled: z.boolean().meta(DOC.rollover_enabled),
  active: z.boolean().meta(DOC.active),
};

/** The tasks service fills the defaults. */
export const RecurrenceRule = z.strictObject({
  frequency: RecurrenceFields.frequency,
  interval: RecurrenceFields.interval.optional(),
  by_weekday: RecurrenceFields.by_weekday.optional(),
  by_month_day: RecurrenceFields.by_month_day.optional(),
  basis: RecurrenceFields.basis.optional(),
  timezone: RecurrenceFields.timezone.optional(),
  start_date: RecurrenceFields.start_date.optional(),
  end_date: RecurrenceFields.end_date.optional(),
  max_occurrences: RecurrenceFields.max_occurrences.optional(),
  rollover_enabled: RecurrenceFields.rollover_enabled.optional(),
  active: RecurrenceFields.active.optional(),
});
export type RecurrenceRule = z.output<typeof RecurrenceRule>;

export function recurrenceRuleProblems(r: RecurrenceRule): Array<[keyof RecurrenceRule, string]> {
  const out: Array<[keyof RecurrenceRule, string]> = [];
  if (r.by_weekday !== undefined && r.frequency !== "WEEKLY") out.push(["by_weekday", "applies only to frequency WEEKLY"]);
  if (r.by_month_day !== undefined && r.frequency !== "MONTHLY" && r.frequency !== "YEARLY")
    out.push(["by_month_day", "applies only to frequency MONTHLY or YEARLY"]);
  if (r.end_date !== undefined && r.max_occurrences !== undefined) out.push(["max_occurrences", "cannot be combined with end_date (a series ends one way)"]);
  if (r.end_date !== undefined && r.start_date !== undefined && r.end_date < r.start_date) out.push(["end_date", "must not be before start_date"]);
  return out;
}

/** An `rrule` is checked only as text here: its parser is the tasks service's, which refuses one it cannot keep. */
export const RecurrenceInput = RecurrenceRule.extend({
  frequency: RecurrenceFields.frequency.optional(),
  rrule: Label.min(1).max(500).optional().meta(DOC.rrule),
}).superRefine(
  (r, ctx) => {
    if (r.rrule !== undefined) return;
    if (r.frequency === undefined) {
      ctx.addIssue({ code: "custom", path: ["frequency"], message: "is required (or give the rule as rrule)" });
      return;
    }
    for (const [path, message] of recurrenceRuleProblems({ ...r, frequency: r.frequency })) ctx.addIssue({ code: "custom", path: [path], message });
  },
  // One problem at a time: the whole rule only once every field is well formed.
  { when: (payload) => payload.issues.length === 0 },
);
export type RecurrenceInput = z.output<typeof RecurrenceInput>;

export const Recurrence = z.object({
  frequency: RecurrenceFrequency.meta(DOC.frequency),
  interval: z.number().int().meta(DOC.interval),
  by_weekday: z.array(z.number().int()).meta(DOC.by_weekday),
  by_month_day: z.number().int().nullable().meta(DOC.by_month_day),
  basis: RecurrenceBasis.meta(DOC.basis),
  timezone: z.string().meta(DOC.timezone),
  start_date: z.string().nullable().meta(DOC.start_date),
  end_date: z.string().nullable().meta(DOC.end_date),
  max_occurrences: z.number().int().nullable().meta(DOC.max_occurrences),
  rollover_enabled: z.boolean().meta(DOC.rollover_enabled),
  active: z.boolean().meta(DOC.active),
  rrule: z.string().meta(DOC.rrule),
});
export type Recurrence = z.infer<typeof Recurrence>;
