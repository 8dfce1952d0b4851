import type { Recurrence } from "@tasksvc/contracts";
// rrule ships CommonJS without named ESM exports: the default import is its module object.
import rrule from "rrule";

const { RRule } = rrule;
type Rule = InstanceType<typeof RRule>;

/**
 * A slot is a calendar day in the series' zone, never an instant, so a daylight-saving change moves
 * no occurrence to another day. The rule is evaluated over floating days (each the UTC midnight of
 * its date), so no offset enters the arithmetic (decision 0021).
 */

export type Day = string;

const FREQ = { DAILY: RRule.DAILY, WEEKLY: RRule.WEEKLY, MONTHLY: RRule.MONTHLY, YEARLY: RRule.YEARLY } as const;

const floating = (d: Day): Date => new Date(`${d}T00:00:00.000Z`);
const dayOf = (d: Date): Day => d.toISOString().slice(0, 10);
const dayFormat = new Map<string, Intl.DateTimeFormat>();

export function localDay(at: Date, timeZone: string): Day {
  let f = dayFormat.get(timeZone);
  if (!f) {
    // en-CA writes dates as YYYY-MM-DD.
    f = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" });
    dayFormat.set(timeZone, f);
  }
  return f.format(at);
}

/**
 * By bisection over the zone's own day, so any offset and daylight-saving rule is its own: no
 * arithmetic on offsets. Within 50 hours of `now` in every zone (offsets span UTC-12 to UTC+14).
 */
export function nextDayStart(now: Date, timeZone: string): Date {
  const today = localDay(now, timeZone);
  // In whole seconds (zones change on whole minutes): lo is still today, hi is past it.
  let lo = Math.floor(now.getTime() / 1000);
  let hi = lo + 50 * 3600;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDay(new Date(mid * 1000), timeZone) > today) hi = mid;
    else lo = mid;
  }
  return new Date(hi * 1000);
}

/** A month without that day uses its last day (decision 0008); RFC 5545 would skip the month instead. */
function monthDay(d: number): { bymonthday: number[]; bysetpos?: number[] } {
  if (d <= 28) return { bymonthday: [d] };
  return { bymonthday: Array.from({ length: d - 27 }, (_, i) => 28 + i), bysetpos: [-1] };
}

/** YEARLY with `by_month_day` is that day of the first day's month (RFC 5545 alone would take it in every month). */
export function ruleOf(r: Recurrence, seriesStart: Day): Rule {
  const first = r.start_date ?? seriesStart;
  const start = floating(first);
  return new RRule({
    freq: FREQ[r.frequency],
    interval: r.interval,
    dtstart: start,
    ...(r.by_weekday.length ? { byweekday: r.by_weekday.map((d) => d - 1) } : {}),
    ...(r.by_month_day === null ? {} : monthDay(r.by_month_day)),
    ...(r.frequency === "YEARLY" && r.by_month_day !== null ? { bymonth: [start.getUTCMonth() + 1] } : {}),
    ...(r.end_date === null ? {} : { until: floating(r.end_date) }),
    ...(r.max_occurrences === null ? {} : { count: r.max_occurrences }),
  });
}

export function slotAfter(rule: Rule, day: Day): Day | null {
  const next = rule.after(floating(day), false);
  return next ? dayOf(next) : null;
}

export function slotFrom(rule: Rule, day: Day): Day | null {
  const next = rule.after(floating(day), true);
  return next ? dayOf(next) : null;
}

export function firstSlot(r: Recurrence, begun: Day): Day | null {
  return slotFrom(ruleOf(r, begun), r.start_date ?? begun);
}

/** Catch-up without flooding: a scheduler that was down for a month makes one occurrence, not thirty. */
export function dueSlot(rule: Rule, lastMade: Day | null, today: Day): Day | null {
  const latest = rule.before(floating(today), true);
  if (!latest) return null;
  const day = dayOf(latest);
  return lastMade !== null && day <= lastMade ? null : day;
}

export function slotAfterCompletion(r: Recurrence, completedOn: Day): Day {
  // One interval on, with month ends as by_month_day has them (Jan 31 + 1 month = Feb 28).
  const dayOfMonth = Number(completedOn.slice(8, 10));
  const stepRule = ruleOf(
    {
      ...r,
      by_weekday: [],
      by_month_day: r.frequency === "MONTHLY" || r.frequency === "YEARLY" ? dayOfMonth : null,
      start_date: completedOn,
      end_date: null,
      max_occurrences: null,
    },
    completedOn,
  );
  const base = slotAfter(stepRule, completedOn) ?? completedOn;
  if (!r.by_weekday.length && r.by_month_day === null) return base;
  const picked = ruleOf({ ...r, start_date: base, end_date: null, max_occurrences: null }, base);
  return slotFrom(picked, base) ?? base;
}

/** Done before its own day, one interval after its day instead, so the same slot never comes out again. */
export function slotAfterDone(r: Recurrence, last: Day, made: number, doneOn: Day): Day | null {
  if (r.max_occurrences !== null && made + 1 >= r.max_occurrences) return null;
  let next = slotAfterCompletion(r, doneOn);
  if (next <= last) next = slotAfterCompletion(r, last);
  return r.end_date !== null && next > r.end_date ? null : next;
}

/** SCHEDULE: done long after its day, one occurrence from today on, not one per missed slot. */
export function slotAtDone(r: Recurrence, begun: Day, last: Day, made: number, today: Day): Day | null {
  if (!r.active) return null;
  if (r.basis === "COMPLETION") return slotAfterDone(r, last, made, today);
  const rule = ruleOf(r, begun);
  const next = slotAfter(rule, last);
  return next === null || next >= today ? next : slotFrom(rule, today);
}
