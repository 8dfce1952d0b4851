/** Where a `!` would only silence the compiler: a missing value fails the test with a clear message. */
export function must<T>(value: T, what: string): NonNullable<T> {
  if (value === null || value === undefined) throw new Error(`expected ${what}, got ${String(value)}`);
  return value;
}
