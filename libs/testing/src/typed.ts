import type { AddressInfo } from "node:net";

/** Throws when `work` succeeded or failed with anything else, so a test reads the error's fields without a cast. */
export async function rejectionOf<E>(work: Promise<unknown> | (() => unknown), type: abstract new (...args: never[]) => E): Promise<E> {
  let settled: { value: unknown } | { error: unknown };
  try {
    settled = { value: await (typeof work === "function" ? work() : work) };
  } catch (error) {
    settled = { error };
  }
  if ("value" in settled) throw new Error(`expected a failure with ${type.name}, but it answered ${JSON.stringify(settled.value)}`);
  if (settled.error instanceof type) return settled.error;
  throw new Error(`expected a failure with ${type.name}, got ${String(settled.error)}`, { cause: settled.error });
}

export function portOf(server: { address(): string | AddressInfo | null }): number {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error(`the server listens on no TCP port (${String(address)})`);
  return address.port;
}

export interface ProblemFields {
  type: string;
  status: number;
  code: string;
  detail?: string;
  errors?: Array<{ pointer: string }>;
}

function isProblem(body: unknown): body is ProblemFields {
  if (typeof body !== "object" || body === null) return false;
  const fields: Record<string, unknown> = { ...body };
  const errors = fields["errors"];
  return (
    typeof fields["type"] === "string" &&
    typeof fields["code"] === "string" &&
    typeof fields["status"] === "number" &&
    (fields["detail"] === undefined || typeof fields["detail"] === "string") &&
    (errors === undefined ||
      (Array.isArray(errors) && errors.every((e: unknown) => typeof e === "object" && e !== null && "pointer" in e && typeof e.pointer === "string")))
  );
}

/** Throws, quoting the body, when it is not one, so a test that expected a refusal says what it got. */
export function asProblem(body: unknown): ProblemFields {
  if (!isProblem(body)) throw new Error(`expected a problem, got ${JSON.stringify(body)}`);
  return body;
}

export async function problemOf(res: Response): Promise<ProblemFields> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return asProblem(body);
}

export function pointersOf(body: unknown): string[] {
  return (asProblem(body).errors ?? []).map((e) => e.pointer);
}

export interface Checker<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { message: string } };
}

/**
 * Throws, with the status and the body, when it does not fit. The body itself is answered, not
 * what the schema parsed, so a key the schema would drop still reaches the assertions.
 */
export function bodyOf<T>(answer: { status: number; body: unknown; text?: string }, schema: Checker<T>): T {
  const body = answer.body;
  if (fits(schema, body)) return body;
  const checked = schema.safeParse(body);
  throw new Error(
    `the ${answer.status} answer does not fit the schema${checked.success ? "" : ` (${checked.error.message})`}: ${answer.text ?? JSON.stringify(body)}`,
  );
}

function fits<T>(schema: Checker<T>, value: unknown): value is T {
  return schema.safeParse(value).success;
}
