import { z } from "zod";

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid settings:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Names every bad setting at once; `loadConfigOrExit` prints them and exits 1. */
export function parseConfig<S extends z.ZodObject>(schema: S, env: Record<string, string | undefined> = process.env, opts: ParseOptions = {}): z.output<S> {
  const picked: Record<string, string | undefined> = {};
  const source: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const scoped = opts.service && PER_SERVICE_SETTINGS.has(key) ? `${opts.service.toUpperCase()}_${key}` : undefined;
    // An empty variable means "not set", as in most twelve-factor tooling.
    const name = scoped && env[scoped] !== undefined && env[scoped] !== "" ? scoped : key;
    const v = env[name];
    picked[key] = v === "" ? undefined : v;
    source[key] = name;
  }
  const r = schema.safeParse(picked);
  if (!r.success) {
    throw new ConfigError(
      r.error.issues.map((i) => {
        const key = String(i.path[0]);
        const name = source[key] ?? key;
        return `${[name, ...i.path.slice(1)].join(".") || "(settings)"}: ${i.message} (got ${shown(name, picked[key])})`;
      }),
    );
  }
  return r.data;
}

export interface ParseOptions {
  /** Each of PER_SERVICE_SETTINGS is read from `<SERVICE>_<NAME>` first, so one environment can give each service its own database. */
  service?: string;
}

export const PER_SERVICE_SETTINGS: ReadonlySet<string> = new Set([
  "DATABASE_URL",
  "DATABASE_POOL_MODE",
  "DATABASE_MIGRATION_URL",
  "DATABASE_STATEMENT_TIMEOUT",
  "DATABASE_POOL_SIZE",
]);

const SECRET_SETTING = /(?:_KEYS?|SECRET|PASSWORD|TOKEN)(?:_|$)/;

/** Start-up errors reach logs that many people read: a secret shows only its length, a URL's password is masked. */
function shown(name: string, value: string | undefined): string {
  if (value === undefined) return "null";
  if (SECRET_SETTING.test(name)) return `a value of ${value.length} characters, not shown`;
  try {
    const u = new URL(value);
    if (u.password !== "") {
      u.password = "***";
      return JSON.stringify(u.toString());
    }
  } catch {}
  return JSON.stringify(value);
}

export function loadConfigOrExit<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
  opts: ParseOptions = {},
): z.output<S> {
  try {
    return parseConfig(schema, env, opts);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
}

const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** "250ms", "5s", "5m", "2h", "5d" or a bare number of milliseconds. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m || m[1] === undefined) return null;
  const unit = (m[2] ?? "ms") as keyof typeof DURATION_UNITS;
  return Math.round(Number(m[1]) * DURATION_UNITS[unit]);
}

export const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const ms = parseDuration(v);
      if (ms === null) {
        ctx.addIssue({ code: "custom", message: "expected a duration such as 500ms, 5s, 5m, 2h or 5d" });
        return z.NEVER;
      }
      return ms;
    });

const bool = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"])
    .optional()
    .transform((v) => (v === undefined ? fallback : v === "true" || v === "1" || v === "yes"));

const urlString = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    `expected a URL with scheme ${protocols.join(" or ")}`,
  );
const url = (protocols: string[], fallback: string) => urlString(protocols).default(fallback);

/** Each process picks what it reads; docs/operations.md describes every setting. */
export const settings = {
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  DATABASE_URL: url(["postgres:", "postgresql:"], "postgres://localhost:5432/tasks"),
  DATABASE_POOL_MODE: z.enum(["session", "transaction"]).default("session"),
  /** Migrations and index builds hold a session, which a transaction-mode pooler cannot give. */
  DATABASE_MIGRATION_URL: urlString(["postgres:", "postgresql:"]).optional(),
  /** Below the RPC deadline, so that no statement outlives the request that started it. */
  DATABASE_STATEMENT_TIMEOUT: duration("3s").refine((ms) => ms >= 100 && ms <= 600_000, "expected a duration between 100ms and 10m"),
  /** Unset: the service's own (10). Test stacks, many to one Postgres, take fewer. */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(3).max(200).optional(),
  /** Several statement limits, so only a slot that never comes back trips it. */
  DATABASE_TRANSACTION_STUCK_AFTER: duration("30s").refine((ms) => ms >= 1000 && ms <= 3_600_000, "expected a duration between 1s and 1h"),
  OUTBOX_STALL_AFTER: duration("30s").refine((ms) => ms >= 1000 && ms <= 3_600_000, "expected a duration between 1s and 1h"),
  NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  NATS_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/, "letters, digits, _ and - only (it prefixes subjects and stream names)")
    .default("tasksvc"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  LOG_FORMAT: z.enum(["json", "pretty"]).default("json"),
  PUBLIC_BASE_URL: urlString(["http:", "https:"]).optional(),
  OAUTH_ISSUER: z.string().min(1).default("tasksvc-dev"),
  OAUTH_AUDIENCE: z.string().min(1).default("tasksvc-api"),
  OAUTH_JWKS_URL: urlString(["https:", "http:"]).optional(),
  OAUTH_PUBLIC_KEY: z.string().includes("BEGIN PUBLIC KEY", { message: "expected a PEM public key" }).optional(),
  RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(5000),
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5000),
  /** Off in production, where replies pass through as bytes (decision 0020). */
  RPC_CHECK_REPLIES: bool(false),
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SHUTDOWN_DELAY: duration("0s"),
  OTEL_EXPORTER_OTLP_ENDPOINT: urlString(["http:", "https:"]).optional(),
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  bool,
  duration,
} as const;
export * from "./runtime.js";

export const natsServiceSettings = {
  NATS_URL: settings.NATS_URL,
  NATS_NAMESPACE: settings.NATS_NAMESPACE,
  NATS_STREAM_REPLICAS: settings.NATS_STREAM_REPLICAS,
  LOG_LEVEL: settings.LOG_LEVEL,
  LOG_FORMAT: settings.LOG_FORMAT,
  OPS_PORT: settings.OPS_PORT,
  SHUTDOWN_DELAY: settings.SHUTDOWN_DELAY,
  OTEL_EXPORTER_OTLP_ENDPOINT: settings.OTEL_EXPORTER_OTLP_ENDPOINT,
} as const;

export const serviceSettings = {
  DATABASE_URL: settings.DATABASE_URL,
  DATABASE_POOL_MODE: settings.DATABASE_POOL_MODE,
  DATABASE_MIGRATION_URL: settings.DATABASE_MIGRATION_URL,
  DATABASE_STATEMENT_TIMEOUT: settings.DATABASE_STATEMENT_TIMEOUT,
  DATABASE_TRANSACTION_STUCK_AFTER: settings.DATABASE_TRANSACTION_STUCK_AFTER,
  DATABASE_POOL_SIZE: settings.DATABASE_POOL_SIZE,
  OUTBOX_STALL_AFTER: settings.OUTBOX_STALL_AFTER,
  ...natsServiceSettings,
} as const;
