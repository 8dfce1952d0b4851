import { z } from "zod";

export const Timestamp = z.iso.datetime({ offset: false });

// Each public field carries its meaning and an example as zod metadata, from which the OpenAPI document is written.

export const EXAMPLE_INSTANT = "2026-11-23T09:30:00.000Z";

export const CreatedAt = Timestamp.meta({ description: "When it was created (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] });
export const UpdatedAt = Timestamp.meta({ description: "When it last changed (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] });
export const ObjectId = z.string().meta({ description: "The object's id: opaque, stable, unique in its kind.", examples: ["prj_5vN5Zu6nSVCjmB2jJBpwRY"] });
export const Deleted = z.literal(true).meta({ description: "Always true: the object is gone.", examples: [true] });

// Text rules (decision 0010): every string a client sends that is stored or reaches Postgres or a NATS header goes through one of these,
// so a refusal is a 400 naming the field, not a 500; single-line values (lists, logs, headers) also refuse control characters.

// With the u flag a proper surrogate pair is one code point, so only an unpaired half matches.
const LONE_SURROGATE = /\p{Cs}/u;
const CONTROL = /\p{Cc}/u;

export function textProblem(s: string, singleLine: boolean): string | undefined {
  if (s.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (LONE_SURROGATE.test(s)) return "must not contain an unpaired UTF-16 surrogate (U+D800-U+DFFF alone is not a character)";
  if (singleLine && CONTROL.test(s)) return "must be a single line without control characters (no line break, tab or U+0000-U+001F, U+007F-U+009F)";
  return undefined;
}

const textRule = (singleLine: boolean) => (s: string, ctx: z.RefinementCtx) => {
  const problem = textProblem(s, singleLine);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
};

/** They reorder how the rest of a value displays: `invoice\u202Egpj.exe` reads as "invoiceexe.jpg". */
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;

/** Where a value names something a user opens (file names). */
export const noBidiControls = (s: string) => !BIDI_CONTROL.test(s);
export const NO_BIDI_CONTROLS_MESSAGE = "must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069): they disguise a name";

/** Chain limits after. */
export const Text = z.string().superRefine(textRule(false));
/** Chain trim and limits after. */
export const Label = z.string().superRefine(textRule(true));
/** Trimmed first (tabs and line breaks included), so only what remains must be one line. */
export const TrimmedLabel = z.string().trim().superRefine(textRule(true));
export const OpaqueId = Label.min(1).max(100);

export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]{1,255}$/;
export const IdempotencyKey = z.string().regex(IDEMPOTENCY_KEY_PATTERN, { message: "must be 1-255 visible ASCII characters" });

export function page<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item).meta({ description: "The items of this page, in the list's order.", examples: [[]] }),
    has_more: z.boolean().meta({ description: "Whether another page follows: ask for it with `after=<next_cursor>`.", examples: [false] }),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: "Opaque cursor of the next page (pass as `after`), or null on the last page.", examples: [null] }),
  });
}
export type Page<T> = { data: T[]; has_more: boolean; next_cursor: string | null };

export const PageQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(25)
    .meta({ description: "Items per page, 1-100 (default 25).", examples: [25] }),
  // No example: a cursor is signed, so any example would be refused (and UIs prefill "Try it out" with them).
  after: Label.min(1)
    .max(2048)
    .optional()
    .meta({ description: "The `next_cursor` of the previous page; the other parameters must be the same as for that page." }),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const FieldError = z.object({
  pointer: z.string().meta({
    description: "An RFC 6901 JSON pointer to the field: into the body, or /<name> for a query or path parameter.",
    examples: ["/name"],
  }),
  message: z.string().meta({ description: "What is wrong with the field.", examples: ["is required"] }),
});
export type FieldError = z.infer<typeof FieldError>;

/** `obj` with the keys of `order` first, in that order, then any others (a newer producer's) as they came. */
export function inKeyOrder<T extends object>(obj: T, order: readonly string[]): T {
  const from = obj as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of order) if (k in from) out[k] = from[k];
  for (const k of Object.keys(from)) if (!(k in out)) out[k] = from[k];
  return out as T;
}
