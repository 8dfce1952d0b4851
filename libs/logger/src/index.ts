import { pino, type Logger, type LoggerOptions } from "pino";
import { prettyFactory } from "pino-pretty";

export type { Logger };

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

export type LogFormat = "json" | "pretty";

export interface LoggerConfig {
  service: string;
  level?: string;
  format?: LogFormat;
  /** Tests pass one to keep the runner's output readable. */
  destination?: pino.DestinationStream;
  /** Default: when FORCE_COLOR is set (not 0), else when stdout is a terminal and NO_COLOR is unset. */
  colorize?: boolean;
}

export function createLogger(cfg: LoggerConfig): Logger {
  const opts: LoggerOptions = {
    level: cfg.level ?? "info",
    base: { service: cfg.service },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (cfg.format === "pretty") {
    // Synchronously in this process, so order is kept and a fatal line written just before exit is not lost.
    const out = cfg.destination ?? pino.destination({ dest: 1, sync: true });
    const prettify = prettyFactory(prettyOptions(cfg.service, cfg.colorize ?? colorsWanted()));
    return pino(opts, {
      write(line: string) {
        out.write(prettify(line));
      },
    });
  }
  return cfg.destination ? pino(opts, cfg.destination) : pino(opts);
}

const ACCESS_FIELDS = ["method", "url", "status", "ms", "organization_id", "request_id"] as const;

type PrettyOptions = Parameters<typeof prettyFactory>[0];

function prettyOptions(service: string, colorize: boolean): PrettyOptions {
  return {
    colorize,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "service,pid,hostname",
    singleLine: true,
    customPrettifiers: {
      time: (t) => String(t),
      level: (_level, _key, _log, { labelColorized, colors }) => `${labelColorized} ${colors.magenta(service)}`,
    },
    messageFormat: (log, messageKey, _levelLabel, { colors }) => {
      const msg = String(log[messageKey] ?? "");
      if (msg !== "request" || typeof log["method"] !== "string" || typeof log["url"] !== "string") return msg;
      const status = Number(log["status"]);
      const paint = status >= 500 ? colors.red : status >= 400 ? colors.yellow : colors.green;
      const parts = [log["method"], log["url"], paint(String(log["status"])), `${String(log["ms"])}ms`];
      if (typeof log["organization_id"] === "string") parts.push(log["organization_id"]);
      if (typeof log["request_id"] === "string") parts.push(colors.gray(log["request_id"]));
      // pino-pretty parsed this copy for this line alone: taken off so the fields are not repeated as JSON.
      for (const k of ACCESS_FIELDS) delete log[k];
      return parts.join(" ");
    },
  };
}

function colorsWanted(): boolean {
  const force = process.env["FORCE_COLOR"];
  if (force !== undefined && force !== "") return force !== "0" && force !== "false";
  if (process.env["NO_COLOR"]) return false;
  return process.stdout.isTTY === true;
}
