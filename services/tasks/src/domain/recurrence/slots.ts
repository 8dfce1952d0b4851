import type { Recurrence } from "@tasksvc/contracts";
// rrule ships CommonJS without named ESM exports: the default import is its module object.
import rrule from "rrule";

const { RRule } = rrule;
type Rule = InstanceType<typeof RRule>;

/**
 * Recurrence slots (decision 0021): the days a recurring task's occurrences are due.
 * A slot is a calendar day in the series' time zone, never an instant, so a daylight-saving change
 * moves no occurrence to another day ("every day" stays every local day). The RFC 5545 rule is
 * evaluated by `rrule` over floating days: each day is the UTC midnight of the same date, so no
 * offset enters the arithmetic at all. Only "which day is it now, there" needs the zone (localDay).
 */

/** A calendar day, `YYYY-MM-DD`. */
export type Day = string;

const FREQ = { DAILY: RRule.DAILY, WEEKLY: RRule.WEEKLY, MONTHLY: RRule.MONTHLY, YEARLY: RRule.YEARLY } as const;

const floating = (d: Day): Date => new Date(`${d}T00:00:00.000Z`);
const dayOf = (d: Date): Day => d.toISOString().slice(0, 10);
const dayFormat = new Map<string, Intl.DateTimeFormat>();

/** The day it is at `at` in the IANA zone `timeZone`. */
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
 * The first instant, to the second, at which the next day has begun in `timeZone`: when a series
 * the scheduler found nothing to do for can next have something (migration 0008's wake-up). Found
 * by bisection over the zone's own day, so any offset and daylight-saving rule is its own: no
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

/**
 * `by_month_day` as decision 0008 defines it: a month without that day uses its last day. RFC
 * 5545 skips such months instead, so days past 28 become "the last of 28…d that exists"
 * (BYMONTHDAY=28,…,d;BYSETPOS=-1).
 */
function monthDay(d: number): { bymonthday: number[]; bysetpos?: number[] } {
  if (d <= 28) return { bymonthday: [d] };
  return { bymonthday: Array.from({ length: d - 27 }, (_, i) => 28 + i), bysetpos: [-1] };
}

/**
 * The rule of a recurrence from its first day (`start_date`, else the day the series began).
 * WEEKLY without `by_weekday` repeats on the first day's weekday; YEARLY with `by_month_day` is
 * that day of the first day's month (RFC 5545 alone would take it in every month).
 */
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

/** The first slot after `day` (exclusive), or null once the rule has ended (end_date, max_occurrences). */
export function slotAfter(rule: Rule, day: Day): Day | null {
  const next = rule.after(floating(day), false);
  return next ? dayOf(next) : null;
}

/** The first slot on or after `day`, or null once the rule has ended. */
export function slotFrom(rule: Rule, day: Day): Day | null {
  const next = rule.after(floating(day), true);
  return next ? dayOf(next) : null;
}

/**
 * The slot of a series' head, its first occurrence: the rule's first day from `start_date`, else
 * from `begun` (the day in the series' zone the series began). Null when the rule has none.
 */
export function firstSlot(r: Recurrence, begun: Day): Day | null {
  return slotFrom(ruleOf(r, begun), r.start_date ?? begun);
}

/**
 * Catch-up without flooding: the latest slot due by `today` (inclusive) that comes after
 * `lastMade` (the last slot an occurrence was made for; null for none yet). A scheduler that was
 * down for a month makes this one occurrence, not thirty; null when nothing is due.
 */
export function dueSlot(rule: Rule, lastMade: Day | null, today: Day): Day | null {
  const latest = rule.before(floating(today), true);
  if (!latest) return null;
  const day = dayOf(latest);
  return lastMade !== null && day <= lastMade ? null : day;
}

/**
 * Basis COMPLETION: the next occurrence is due one interval after the day the last was completed
 * (in the series' zone), then on the rule's first slot from there when the rule picks weekdays or
 * a day of the month. End date and the count of occurrences made are the caller's to check.
 */
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

/**
 * Basis COMPLETION: the slot of the occurrence after the latest (its slot `last`; `made`
 * occurrences made after the head), which was done (completed, or archived instead) on `doneOn`.
 * One interval after that day; done before its own day, one interval after its day instead, so
 * the same slot never comes out again. Null once `end_date` or `max_occurrences` (the head
 * counts) ends the series.
 */
export function slotAfterDone(r: Recurrence, last: Day, made: number, doneOn: Day): Day | null {
  if (r.max_occurrences !== null && made + 1 >= r.max_occurrences) return null;
  let next = slotAfterCompletion(r, doneOn);
  if (next <= last) next = slotAfterCompletion(r, last);
  return r.end_date !== null && next > r.end_date ? null : next;
}

/**
 * The slot of the occurrence made when the series' latest one (its slot `last`; `made` made after
 * the head) is done `today`, in the transaction of that write; null for none (paused, ended).
 * - COMPLETION: slotAfterDone.
 * - SCHEDULE: the rule's first slot after `last` that is not before `today`. Done early, the next
 *   slot shows at once; done long after, one occurrence from today on, not one per missed slot
 *   (the catch-up rule).
 */
export function slotAtDone(r: Recurrence, begun: Day, last: Day, made: number, today: Day): Day | null {
  if (!r.active) return null;
  if (r.basis === "COMPLETION") return slotAfterDone(r, last, made, today);
  const rule = ruleOf(r, begun);
  const next = slotAfter(rule, last);
  return next === null || next >= today ? next : slotFrom(rule, today);
}
