import { z } from "zod";

export const Timestamp = z.iso.datetime({ offset: false });

/** Spec 2.12, the envelope of every cursor list. */
export function page<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });
}
export type Page<T> = { data: T[]; has_more: boolean; next_cursor: string | null };

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25),
  after: z.string().min(1).max(2048).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

/** A field error: RFC 6901 JSON pointer into the request, and a human message. */
export const FieldError = z.object({ pointer: z.string(), message: z.string() });
export type FieldError = z.infer<typeof FieldError>;
