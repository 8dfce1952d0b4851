import { pino, type Logger, type LoggerOptions } from "pino";
import { prettyFactory } from "pino-pretty";

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

/** `json`: one JSON object a line (production). `pretty`: for a person at a terminal (LOG_FORMAT). */
export type LogFormat = "json" | "pretty";

export interface LoggerConfig {
  service: string;
  level?: string;
  /** Default `json`. */
  format?: LogFormat;
  /** Tests pass a destination to keep the runner's output readable. */
  destination?: pino.DestinationStream;
  /** `pretty` only: colours. Default: when FORCE_COLOR is set (not 0), else when stdout is a terminal and NO_COLOR is unset. */
  colorize?: boolean;
}

export function createLogger(cfg: LoggerConfig): Logger {
  const opts: LoggerOptions = {
    level: cfg.level ?? "info",
    base: { service: cfg.service },
    // Redaction happens while the line is serialized, so it holds for both formats.
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (cfg.format === "pretty") {
    // pino-pretty in this process, synchronously: each JSON line is prettified and written before
    // the log call returns, so order is kept and nothing is lost at process.exit (a worker-thread
    // transport would lose a fatal line written just before exit).
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

/** The gateway's access line (services/gateway/src/app.ts, onResponse): shown as one line. */
const ACCESS_FIELDS = ["method", "url", "status", "ms", "organization_id", "request_id"] as const;

type PrettyOptions = Parameters<typeof prettyFactory>[0];

/**
 * `12:00:01.234 INFO gateway: POST /v1/tasks 201 12ms org_… req_…` for an access line;
 * `12:00:01.234 INFO keys: rpc handled {"op":"keys.listOrganizations","ok":true,…}` for the
 * others (their fields as compact JSON on the same line); an error's stack below its line.
 */
function prettyOptions(service: string, colorize: boolean): PrettyOptions {
  return {
    colorize,
    translateTime: "SYS:HH:MM:ss.l",
    // The service is printed beside the level; pid and hostname are not logged (pino's `base`).
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
      // pino-pretty formats the message before the rest of the line, from a copy parsed for this
      // line alone: the fields shown here are taken off it so they are not repeated as JSON after.
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
