/** Postgres' rendering of a timestamptz as Date#toISOString() renders it (milliseconds, Z). */
export const ISO_SQL = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
