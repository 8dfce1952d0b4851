import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ConfigError, natsServiceSettings, parseConfig, parseDuration, settings } from "../src/index.js";

const Schema = z.object({ PORT: settings.PORT, LOG_LEVEL: settings.LOG_LEVEL, NATS_NAMESPACE: settings.NATS_NAMESPACE, DATABASE_URL: settings.DATABASE_URL });

describe("parseConfig", () => {
  it("when nothing is set, then DESIGN.md defaults apply", () => {
    expect(parseConfig(Schema, {})).toEqual({ PORT: 8080, LOG_LEVEL: "info", NATS_NAMESPACE: "tasksvc", DATABASE_URL: "postgres://localhost:5432/tasks" });
  });

  it("when several settings are bad, then the error names every one with its value", () => {
    try {
      parseConfig(Schema, { PORT: "eighty", LOG_LEVEL: "loud", NATS_NAMESPACE: "a.b", DATABASE_URL: "mysql://x" });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const msg = (e as Error).message;
      for (const name of ["PORT", "LOG_LEVEL", "NATS_NAMESPACE", "DATABASE_URL"]) expect(msg).toContain(name);
      expect(msg).toContain('"eighty"');
    }
  });

  it("when a variable is empty, then it counts as unset", () => {
    expect(parseConfig(Schema, { PORT: "" }).PORT).toBe(8080);
  });

  it("when a service-scoped database setting is set, then that service reads it over the shared one, and other settings and services do not", () => {
    const env = { DATABASE_URL: "postgres://shared/db", TASKS_DATABASE_URL: "postgres://tasks-host/tasks", TASKS_PORT: "1", PORT: "9000" };
    expect(parseConfig(Schema, env, { service: "tasks" })).toMatchObject({ DATABASE_URL: "postgres://tasks-host/tasks", PORT: 9000 });
    expect(parseConfig(Schema, env, { service: "keys" }).DATABASE_URL).toBe("postgres://shared/db");
    expect(parseConfig(Schema, env).DATABASE_URL).toBe("postgres://shared/db");
    expect(parseConfig(Schema, { ...env, TASKS_DATABASE_URL: "" }, { service: "tasks" }).DATABASE_URL).toBe("postgres://shared/db");
  });

  it("when a service-scoped setting is bad, then the error names the variable it was read from", () => {
    expect(() => parseConfig(Schema, { DATABASE_URL: "postgres://ok/db", BOARDS_DATABASE_URL: "mysql://x" }, { service: "boards" })).toThrow(
      /BOARDS_DATABASE_URL: .*"mysql:\/\/x"/,
    );
  });

  it("when other variables are present, then they are ignored (each process reads only its own)", () => {
    expect(parseConfig(Schema, { SECRET_OF_SOMEONE_ELSE: "x" })).not.toHaveProperty("SECRET_OF_SOMEONE_ELSE");
  });
});

describe("LOG_FORMAT", () => {
  const Logs = z.object({ ...natsServiceSettings });

  it("when it is unset, then every process logs JSON", () => {
    expect(parseConfig(Logs, {}).LOG_FORMAT).toBe("json");
  });

  it.each(["json", "pretty"])("when it is %s, then that format is read", (v) => {
    expect(parseConfig(Logs, { LOG_FORMAT: v }).LOG_FORMAT).toBe(v);
  });

  it("when it is neither json nor pretty, then the settings error names it with its value", () => {
    expect(() => parseConfig(Logs, { LOG_FORMAT: "colour" })).toThrow(ConfigError);
    expect(() => parseConfig(Logs, { LOG_FORMAT: "colour" })).toThrow(/LOG_FORMAT: .*\(got "colour"\)/);
  });
});

describe("durations", () => {
  it.each([
    ["250ms", 250],
    ["5s", 5000],
    ["5m", 300_000],
    ["2h", 7_200_000],
    ["5d", 432_000_000],
    ["1500", 1500],
  ])("when %s is parsed, then it is %d ms", (text, ms) => expect(parseDuration(text)).toBe(ms));

  it("when the text is not a duration, then null", () => {
    expect(parseDuration("soon")).toBeNull();
    expect(parseDuration("5 weeks")).toBeNull();
  });
});

describe("a refused secret", () => {
  const Secrets = z.object({
    KEYS_SECRET_KEY: z.string().length(64).optional(),
    LINK_SIGNING_KEYS: z
      .string()
      .regex(/^k\d+:/)
      .optional(),
    DATABASE_URL: z
      .url()
      .refine((u) => u.startsWith("postgres://"))
      .optional(),
  });
  const messageOf = (env: Record<string, string>) => {
    try {
      parseConfig(Secrets, env);
    } catch (e) {
      return e instanceof ConfigError ? e.message : String(e);
    }
    return "";
  };

  it("when a key setting is malformed, then the start-up error names it and its length, never its value", () => {
    const m = messageOf({ KEYS_SECRET_KEY: "s3cr3t-but-short", LINK_SIGNING_KEYS: "good-key-material,k2:more" });
    expect(m).toContain("KEYS_SECRET_KEY");
    expect(m).toContain("a value of 16 characters, not shown");
    expect(m).toContain("LINK_SIGNING_KEYS");
    expect(m).not.toContain("s3cr3t");
    expect(m).not.toContain("good-key-material");
  });

  it("when a URL with a password is refused, then its password is masked and the rest shown", () => {
    const m = messageOf({ DATABASE_URL: "mysql://app:hunter2@db.example:3306/tasks" });
    expect(m).toContain("mysql://app:***@db.example:3306/tasks");
    expect(m).not.toContain("hunter2");
  });
});
