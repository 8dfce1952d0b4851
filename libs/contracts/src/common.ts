import { z } from "zod";

export const Timestamp = z.iso.datetime({ offset: false });

// ---------------------------------------------------------------------------------------------
// Text rules (decision 0010). Every string a client sends that is stored, or that reaches
// Postgres or a NATS header, goes through one of these, so the refusal is a 400 naming the field
// instead of a driver error at the bottom of a service (a 500).
//
// - NUL (U+0000): Postgres text and jsonb cannot hold it (SQLSTATE 22021 / 22P05).
// - An unpaired UTF-16 surrogate ("\ud800" in JSON) is no Unicode character: UTF-8 encoding turns
//   it into U+FFFD silently (text columns) and jsonb refuses its escape (22P05).
// - Single-line values (names, titles, ids) also refuse every control character (Unicode Cc:
//   U+0000-U+001F, U+007F-U+009F), line breaks and tabs included: they are shown in lists, logs and
//   headers, where a control character is never meant. Free text keeps them (multi-line content).

// With the u flag a proper surrogate pair is one code point, so only an unpaired half matches.
const LONE_SURROGATE = /\p{Cs}/u;
const CONTROL = /\p{Cc}/u;

/** Why `s` is not acceptable text, or undefined when it is. */
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

/** Free text (descriptions, notes): anything but NUL and unpaired surrogates. Chain limits after. */
export const Text = z.string().superRefine(textRule(false));
/** A single-line name or title: Text without control characters. Chain trim and limits after. */
export const Label = z.string().superRefine(textRule(true));
/** An opaque id as a client sends it (path, query or body): one line of 1-100 characters. */
export const OpaqueId = Label.min(1).max(100);

/** Spec 8: an Idempotency-Key is 1-255 visible ASCII characters (no space, no control, no NUL). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]{1,255}$/;
export const IdempotencyKey = z.string().regex(IDEMPOTENCY_KEY_PATTERN, { message: "must be 1-255 visible ASCII characters" });

/** Spec 2.12, the envelope of every cursor list. */
export function page<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });
}
export type Page<T> = { data: T[]; has_more: boolean; next_cursor: string | null };

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25),
  after: Label.min(1).max(2048).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

/** A field error: RFC 6901 JSON pointer into the request, and a human message. */
export const FieldError = z.object({ pointer: z.string(), message: z.string() });
export type FieldError = z.infer<typeof FieldError>;
