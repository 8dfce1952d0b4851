import type { serviceSettings } from "@tasksvc/config";
import type { RpcCatalog } from "@tasksvc/contracts";
import type { Database, DbOptions } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { ClientOptions, ensureStream, Handlers, NatsConnection, RpcClient } from "@tasksvc/nats";
import type { z } from "zod";

/** The settings the runtime itself reads; a service's schema spreads `serviceSettings` into its own. */
export type BaseConfig = z.output<z.ZodObject<typeof serviceSettings>>;

/** A service's settings schema: an object schema (parsed once per process) that includes the base. */
export type ConfigSchema<C extends BaseConfig = BaseConfig> = z.ZodObject & z.ZodType<C>;

/** A JetStream stream the service needs before it starts (created, or brought to this config). */
export type StreamSpec = Parameters<typeof ensureStream>[1];

/** What a running replica offers: `stop()`, plus whatever its `start` returned (the gateway: `url`). */
export type Running<R = void> = { stop(): Promise<void> } & (R extends object ? R : Record<never, never>);

/**
 * What `start` gets: the connections the runtime opened and the ways to hang work on them. The
 * functions are plain closures, so `start({ db, serve, every })` may destructure them.
 */
export interface ServiceContext<C extends BaseConfig = BaseConfig> {
  readonly name: string;
  readonly cfg: C;
  readonly log: Logger;
  /** The pool bound to the service's own schema, migrated. */
  readonly db: Database;
  readonly nc: NatsConnection;
  /** NATS_NAMESPACE: the prefix of every subject and stream. */
  readonly namespace: string;
  /**
   * Serves a catalog on the queue group named after it (database errors classified); the
   * subscriptions are drained at stop, in the reverse order of everything registered here.
   */
  readonly serve: <K extends RpcCatalog>(catalog: K, handlers: Handlers<K>) => void;
  /** A typed client of another service's catalog in this namespace. */
  readonly client: <K extends RpcCatalog>(catalog: K, opts: Pick<ClientOptions, "timeoutMs">) => RpcClient<K>;
  /**
   * Runs `fn` every `ms` (not at start): a failure is logged as "<what> failed" and the next run
   * comes as usual; a run still going when the next is due is not doubled. Stopped, and its run
   * in flight awaited, at stop.
   */
  readonly every: (ms: number, what: string, fn: () => Promise<unknown>) => void;
  /** Work to undo at stop (or when start fails after this call): run last-registered first. */
  readonly onStop: (fn: () => Promise<void> | void) => void;
}

/**
 * One service: what the runtime sets up before `start` (database schema and pool, NATS, streams)
 * and what `start` adds. `start` is a method, not a property, so that definitions of any settings
 * type fit `ServiceDefinition` (the registry loader handles them alike).
 */
export interface ServiceDefinition<C extends BaseConfig = BaseConfig, R = void> {
  /** As in the registry (libs/contracts services.ts): the package is `@tasksvc/<name>`. */
  readonly name: string;
  /** The Postgres schema the service owns (its search_path). */
  readonly schema: string;
  /** Its folder of forward-only SQL migrations, applied at start under an advisory lock. */
  readonly migrations: string;
  readonly config: ConfigSchema<C>;
  /** Pool sizes (libs/db createDb): connections in all and, of those, for transactions. */
  readonly db?: Pick<DbOptions, "max" | "txMax">;
  readonly streams?: (namespace: string) => StreamSpec[];
  start(ctx: ServiceContext<C>): Promise<R>;
}

/** Identity at run time; the point is the inference (settings type from the schema, result from start). */
export function defineService<C extends BaseConfig, R = void>(def: ServiceDefinition<C, R>): ServiceDefinition<C, R> {
  return def;
}

/** For definitions loaded by name (the test stack): enough of the shape to start one. */
export function isServiceDefinition(value: unknown): value is ServiceDefinition<BaseConfig, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Partial<Record<keyof ServiceDefinition, unknown>>;
  return (
    typeof v.name === "string" &&
    typeof v.schema === "string" &&
    typeof v.migrations === "string" &&
    typeof v.start === "function" &&
    typeof v.config === "object"
  );
}
