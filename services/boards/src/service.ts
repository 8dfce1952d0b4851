import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { boardsRpc, tasksRpc } from "@tasksvc/contracts";
import { checkDb, createDb, databaseErrorAsAppError, ensureDatabase, migrate } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { client, connectNats, serve } from "@tasksvc/nats";
import { z } from "zod";
import { boardsService } from "./domain/boards-service.js";
import { boardsRepo } from "./repo/boards-repo.js";
import { boardsHandlers } from "./rpc.js";

export const BoardsConfig = z.object({ ...serviceSettings, RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS });
export type BoardsConfig = z.output<typeof BoardsConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));
const SCHEMA = "boards";
const SWEEP_EVERY_MS = 60 * 60_000;

/** Starts one boards-service replica: migrate, connect, serve. */
export async function startBoards(cfg: BoardsConfig, log: Logger) {
  await ensureDatabase(cfg.DATABASE_URL);
  await migrate({ url: cfg.DATABASE_URL, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  const db = createDb({ url: cfg.DATABASE_URL, schema: SCHEMA });
  await checkDb(db, cfg.DATABASE_URL);
  const nc = await connectNats({ url: cfg.NATS_URL, name: "boards" });
  const tasks = client(nc, tasksRpc, { namespace: cfg.NATS_NAMESPACE, timeoutMs: cfg.RPC_TIMEOUT_MS });
  const repo = boardsRepo(db.sql);
  const svc = boardsService({
    repo,
    tx: (fn) => db.tx((t) => fn(boardsRepo(t as never))) as never,
    tasks: {
      lookup: async (ctx, numbers) => (await tasks.call("lookupTasks", { numbers }, ctx)).tasks,
      withSubtasks: (ctx, number) => tasks.call("taskWithSubtasks", { number }, ctx),
    },
  });
  const served = serve(nc, boardsRpc, boardsHandlers(svc), { namespace: cfg.NATS_NAMESPACE, log, classify: databaseErrorAsAppError });
  const sweeper = setInterval(() => {
    repo.idempotency.sweep().catch((err: unknown) => log.warn({ err }, "idempotency sweep failed"));
  }, SWEEP_EVERY_MS);
  sweeper.unref();
  log.info({ namespace: cfg.NATS_NAMESPACE }, "boards service ready");
  return {
    async stop() {
      clearInterval(sweeper);
      await served.drain();
      await nc.drain();
      await db.end({ timeout: 5 });
    },
  };
}
