import { z } from "zod";

/**
 * UTC years 1000 to 9999 (decision 0010): year 0000 passes Date but no Postgres type, earlier years
 * invite two-digit-year traps, and an instant past 9999-12-31 has no four-digit ISO form.
 */
export const DATE_RANGE = { first: "1000-01-01", last: "9999-12-31" } as const;
const FIRST_INSTANT = Date.parse(`${DATE_RANGE.first}T00:00:00.000Z`);
const LAST_INSTANT = Date.parse(`${DATE_RANGE.last}T23:59:59.999Z`);
const OUT_OF_RANGE = `must lie between ${DATE_RANGE.first} and ${DATE_RANGE.last} (UTC)`;

function isCalendarDay(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00.000Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

/** A real calendar day (2026-02-30 is refused), interpreted as a UTC day. */
export const DateOnly = z
  .string()
  .superRefine((s, ctx) => {
    // A malformed day is not also reported as out of range.
    if (!isCalendarDay(s)) ctx.addIssue({ code: "custom", message: "must be a calendar day written YYYY-MM-DD" });
    else if (s < DATE_RANGE.first) ctx.addIssue({ code: "custom", message: OUT_OF_RANGE });
  })
  .meta({ format: "date" });

/**
 * An ISO-8601 date-time with an offset, or a bare date taken as 00:00 UTC. The day's branch says
 * `format: date` in the document, so a validator of it accepts both forms.
 */
export const DateTimeInput = z
  .union([z.iso.datetime({ offset: true }), z.string().refine(isCalendarDay).meta({ format: "date" })], {
    message: "must be a date-time with an offset (2026-11-22T09:00:00Z) or a date YYYY-MM-DD (00:00 UTC)",
  })
  .superRefine((s, ctx) => {
    const t = Date.parse(s.length === 10 ? `${s}T00:00:00.000Z` : s);
    if (!(t >= FIRST_INSTANT && t <= LAST_INSTANT)) ctx.addIssue({ code: "custom", message: OUT_OF_RANGE });
  });
