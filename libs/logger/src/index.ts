import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger };

/** Paths never written to a log: credentials and secrets wherever they appear. */
export const REDACT_PATHS = [
  "authorization",
  "headers.authorization",
  "req.headers.authorization",
  "req.headers.cookie",
  "api_key",
  "*.api_key",
  "key",
  "*.key",
  "secret",
  "*.secret",
  "access_token",
  "*.access_token",
];

export interface LoggerConfig {
  service: string;
  level?: string;
  /** Tests pass a destination to keep the runner's output readable. */
  destination?: pino.DestinationStream;
}

export function createLogger(cfg: LoggerConfig): Logger {
  const opts: LoggerOptions = {
    level: cfg.level ?? "info",
    base: { service: cfg.service },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return cfg.destination ? pino(opts, cfg.destination) : pino(opts);
}
