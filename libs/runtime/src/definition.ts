import type { natsServiceSettings, serviceSettings } from "@tasksvc/config";
import type { RpcCatalog } from "@tasksvc/contracts";
import type { Backfill, ConcurrentIndex, Database, DbOptions } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { ClientOptions, ensureStream, Handlers, NatsConnection, RpcClient } from "@tasksvc/nats";
import type { Health } from "@tasksvc/telemetry";
import type { z } from "zod";

export type BaseConfig = z.output<z.ZodObject<typeof natsServiceSettings>>;
export type DbConfig = z.output<z.ZodObject<typeof serviceSettings>>;

export type ConfigSchema<C extends BaseConfig = BaseConfig> = z.ZodObject & z.ZodType<C>;

export type StreamSpec = Parameters<typeof ensureStream>[1];

/** Plus whatever its `start` returned (the gateway: `url`). */
export type Running<R = void> = { stop(): Promise<void>; readonly opsPort: number | undefined } & (R extends object ? R : Record<never, never>);

/** Plain closures, so `start({ db, serve, every })` may destructure them. */
export interface ServiceContext<C extends BaseConfig = BaseConfig> {
  readonly name: string;
  readonly cfg: C;
  readonly log: Logger;
  readonly nc: NatsConnection;
  readonly namespace: string;
  /** Drained at stop, in the reverse order of everything registered here. */
  readonly serve: <K extends RpcCatalog>(catalog: K, handlers: Handlers<K>) => void;
  readonly client: <K extends RpcCatalog>(catalog: K, opts: Pick<ClientOptions, "timeoutMs">) => RpcClient<K>;
  /** Not at start; a failure is logged and the next run comes as usual; a run still going is not doubled. */
  readonly every: (ms: number, what: string, fn: () => Promise<unknown>) => void;
  /** Also run when start fails after this call; last-registered first. */
  readonly onStop: (fn: () => Promise<void> | void) => void;
  /** Postgres and NATS are checked already; readiness fails once the replica begins to stop. */
  readonly health: Health;
}

export interface DbServiceContext<C extends DbConfig = DbConfig> extends ServiceContext<C> {
  readonly db: Database;
}

interface DefinitionBase<C extends BaseConfig> {
  /** As in the registry: the package is `@tasksvc/<name>`. */
  readonly name: string;
  readonly config: ConfigSchema<C>;
  readonly streams?: (namespace: string) => StreamSpec[];
}

/** `start` is a method, not a property, so that definitions of any settings type fit `ServiceDefinition`. */
export interface DbServiceDefinition<C extends DbConfig = DbConfig, R = void> extends DefinitionBase<C> {
  readonly schema: string;
  /** Forward-only SQL, applied at start under an advisory lock. */
  readonly migrations: string;
  /** Built after the migrations with CREATE INDEX CONCURRENTLY, so writers are not blocked. */
  readonly indexes?: readonly ConcurrentIndex[];
  /** Filled for older rows, then made not null, before the service serves. */
  readonly backfills?: readonly Backfill[];
  readonly db?: Pick<DbOptions, "max" | "txMax" | "snapshots">;
  start(ctx: DbServiceContext<C>): Promise<R>;
}

export interface StatelessServiceDefinition<C extends BaseConfig = BaseConfig, R = void> extends DefinitionBase<C> {
  readonly schema?: undefined;
  start(ctx: ServiceContext<C>): Promise<R>;
}

export type ServiceDefinition<C extends BaseConfig = BaseConfig, R = void> =
  | (C extends DbConfig ? DbServiceDefinition<C, R> : never)
  | StatelessServiceDefinition<C, R>;

/** Identity at run time; the point is the inference of the settings and result types. */
export function defineService<C extends DbConfig, R = void>(def: DbServiceDefinition<C, R>): DbServiceDefinition<C, R> {
  return def;
}

export function defineStatelessService<C extends BaseConfig, R = void>(def: StatelessServiceDefinition<C, R>): StatelessServiceDefinition<C, R> {
  return def;
}

/** For definitions loaded by name (the test stack). */
export function isServiceDefinition(value: unknown): value is ServiceDefinition<DbConfig, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Partial<Record<keyof DbServiceDefinition, unknown>>;
  const storage = v.schema === undefined || (typeof v.schema === "string" && typeof v.migrations === "string");
  return typeof v.name === "string" && storage && typeof v.start === "function" && typeof v.config === "object";
}
