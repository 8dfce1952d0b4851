import { z } from "zod";
import { PageQuery, Timestamp, page } from "./common.js";
import type { RpcCatalog } from "./rpc.js";

export const TASK_STATUSES = ["TODO", "IN_PROGRESS", "IN_REVIEW", "COMPLETED", "BLOCKED"] as const;
export const TaskStatus = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatus>;

export const TASK_PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT"] as const;
export const TaskPriority = z.enum(TASK_PRIORITIES);
export type TaskPriority = z.infer<typeof TaskPriority>;

/** Spec 2.1: `T-12` or `12` on input; always `T-<n>` on output. */
export const TaskRef = z
  .string()
  .regex(/^(?:T-)?[0-9]{1,12}$/, "must be a task id such as T-12 (or 12)")
  .transform((v) => Number(v.replace(/^T-/, "")));
export const taskId = (n: number | string) => `T-${n}`;

/** A calendar day `YYYY-MM-DD` that exists (no 2026-02-30), read as the UTC day. */
export const DateOnly = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "must be a date YYYY-MM-DD")
  .refine((v) => {
    const d = new Date(`${v}T00:00:00.000Z`);
    return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === v;
  }, "is not a real calendar day");

const isTimeZone = (tz: string) => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};

export const RECURRENCE_FREQUENCIES = ["DAILY", "WEEKLY", "MONTHLY", "YEARLY"] as const;
export const RECURRENCE_BASES = ["SCHEDULE", "COMPLETION"] as const;

/**
 * Recurrence (spec 2.1 names the fields; the value sets beyond DAILY and SCHEDULE are ours:
 * docs/decisions). by_weekday uses ISO numbers 1 (Monday) … 7 (Sunday).
 */
export const Recurrence = z
  .strictObject({
    frequency: z.enum(RECURRENCE_FREQUENCIES),
    interval: z.number().int().min(1).max(366).default(1),
    by_weekday: z.array(z.number().int().min(1).max(7)).max(7).default([]),
    by_month_day: z.number().int().min(1).max(31).nullable().default(null),
    basis: z.enum(RECURRENCE_BASES).default("SCHEDULE"),
    timezone: z.string().max(64).refine(isTimeZone, "is not an IANA time zone").default("UTC"),
    start_date: DateOnly.nullable().default(null),
    end_date: DateOnly.nullable().default(null),
    max_occurrences: z.number().int().min(1).max(10_000).nullable().default(null),
    rollover_enabled: z.boolean().default(false),
    active: z.boolean().default(true),
    rrule: z.string().max(500).nullable().default(null),
  })
  .refine((r) => !(r.start_date && r.end_date) || r.start_date <= r.end_date, { path: ["end_date"], message: "must not be before start_date" });
export type Recurrence = z.output<typeof Recurrence>;

export const Task = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  status: TaskStatus,
  priority: TaskPriority.nullable(),
  start_date: Timestamp.nullable(),
  due_date: Timestamp.nullable(),
  notes: z.string().nullable(),
  story_points: z.number().nullable(),
  project_ids: z.array(z.string()),
  parent_task_id: z.string().nullable(),
  archived: z.boolean(),
  recurrence: Recurrence.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Task = z.infer<typeof Task>;
