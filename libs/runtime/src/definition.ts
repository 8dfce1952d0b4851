import type { natsServiceSettings, serviceSettings } from "@tasksvc/config";
import type { RpcCatalog } from "@tasksvc/contracts";
import type { Backfill, ConcurrentIndex, Database, DbOptions } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { ClientOptions, ensureStream, Handlers, NatsConnection, RpcClient } from "@tasksvc/nats";
import type { Health } from "@tasksvc/telemetry";
import type { z } from "zod";

/** The settings the runtime reads of every service; a schema-less one spreads `natsServiceSettings` into its own. */
export type BaseConfig = z.output<z.ZodObject<typeof natsServiceSettings>>;
/** ... and of a service that owns a schema, which spreads `serviceSettings` (DATABASE_URL too). */
export type DbConfig = z.output<z.ZodObject<typeof serviceSettings>>;

/** A service's settings schema: an object schema (parsed once per process) that includes the base. */
export type ConfigSchema<C extends BaseConfig = BaseConfig> = z.ZodObject & z.ZodType<C>;

/** A JetStream stream the service needs before it starts (created, or brought to this config). */
export type StreamSpec = Parameters<typeof ensureStream>[1];

/**
 * What a running replica offers: `stop()`, its ops port (/metrics, /healthz, /readyz; undefined
 * when it has none), plus whatever its `start` returned (the gateway: `url`).
 */
export type Running<R = void> = { stop(): Promise<void>; readonly opsPort: number | undefined } & (R extends object ? R : Record<never, never>);

/**
 * What `start` gets: the connections the runtime opened and the ways to hang work on them. The
 * functions are plain closures, so `start({ db, serve, every })` may destructure them.
 */
export interface ServiceContext<C extends BaseConfig = BaseConfig> {
  readonly name: string;
  readonly cfg: C;
  readonly log: Logger;
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
  /**
   * The replica's health: add readiness checks (a consumer passes it to `consume()`). Postgres
   * and NATS are checked already; readiness fails once the replica begins to stop.
   */
  readonly health: Health;
}

/** What `start` of a service that owns a schema gets: the context plus its database. */
export interface DbServiceContext<C extends DbConfig = DbConfig> extends ServiceContext<C> {
  /** The pool bound to the service's own schema, migrated. */
  readonly db: Database;
}

interface DefinitionBase<C extends BaseConfig> {
  /** As in the registry (libs/contracts services.ts): the package is `@tasksvc/<name>`. */
  readonly name: string;
  readonly config: ConfigSchema<C>;
  readonly streams?: (namespace: string) => StreamSpec[];
}

/**
 * A service that owns a Postgres schema: what the runtime sets up before `start` (database schema
 * and pool, NATS, streams) and what `start` adds. `start` is a method, not a property, so that
 * definitions of any settings type fit `ServiceDefinition` (the registry loader handles them alike).
 */
export interface DbServiceDefinition<C extends DbConfig = DbConfig, R = void> extends DefinitionBase<C> {
  /** The Postgres schema the service owns (its search_path). */
  readonly schema: string;
  /** Its folder of forward-only SQL migrations, applied at start under an advisory lock. */
  readonly migrations: string;
  /** Indexes built after the migrations without blocking writers (CREATE INDEX CONCURRENTLY). */
  readonly indexes?: readonly ConcurrentIndex[];
  /** Columns filled for the rows from before them, then made not null, before the service serves. */
  readonly backfills?: readonly Backfill[];
  /** Pool sizes (libs/db createDb): connections in all and, of those, for transactions. */
  readonly db?: Pick<DbOptions, "max" | "txMax">;
  start(ctx: DbServiceContext<C>): Promise<R>;
}

/** A service that owns no schema (the delivery worker): NATS only, no database, no DATABASE_URL. */
export interface StatelessServiceDefinition<C extends BaseConfig = BaseConfig, R = void> extends DefinitionBase<C> {
  readonly schema?: undefined;
  start(ctx: ServiceContext<C>): Promise<R>;
}

export type ServiceDefinition<C extends BaseConfig = BaseConfig, R = void> =
  | (C extends DbConfig ? DbServiceDefinition<C, R> : never)
  | StatelessServiceDefinition<C, R>;

/** Identity at run time; the point is the inference (settings type from the schema, result from start). */
export function defineService<C extends DbConfig, R = void>(def: DbServiceDefinition<C, R>): DbServiceDefinition<C, R> {
  return def;
}

/** The same for a service without a schema. */
export function defineStatelessService<C extends BaseConfig, R = void>(def: StatelessServiceDefinition<C, R>): StatelessServiceDefinition<C, R> {
  return def;
}

/** For definitions loaded by name (the test stack): enough of the shape to start one. */
export function isServiceDefinition(value: unknown): value is ServiceDefinition<DbConfig, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Partial<Record<keyof DbServiceDefinition, unknown>>;
  const storage = v.schema === undefined || (typeof v.schema === "string" && typeof v.migrations === "string");
  return typeof v.name === "string" && storage && typeof v.start === "function" && typeof v.config === "object";
}
