/**
 * The value, known to be there: throws, naming `what`, when it is null or undefined. Tests use it
 * where a `!` would only silence the compiler; a missing value fails the test with a clear message
 * instead of a TypeError further on.
 */
export function must<T>(value: T, what: string): NonNullable<T> {
  if (value === null || value === undefined) throw new Error(`expected ${what}, got ${String(value)}`);
  return value;
}
