import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { boardsRpc, tasksRpc } from "@tasksvc/contracts";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { startRolloversConsumer } from "./consumers/rollovers.js";
import { boardsService } from "./domain/boards-service.js";
import { boardsRepo } from "./repo/boards-repo.js";
import { boardsHandlers } from "./rpc.js";

export const BoardsConfig = z.object({ ...serviceSettings, RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS });
export type BoardsConfig = z.output<typeof BoardsConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * The boards service: daily plans of tasks, which it reads from the tasks service by RPC, and
 * rollovers of recurring tasks, which it takes from the tasks service's rollover stream. It
 * depends on the tasks service; the tasks service never calls it.
 */
export const service = defineService({
  name: "boards",
  schema: "boards",
  migrations: MIGRATIONS_DIR,
  config: BoardsConfig,
  async start({ cfg, db, nc, namespace, log, health, serve, client, every, onStop }) {
    const tasks = client(tasksRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
    const repo = boardsRepo(db.sql);
    const svc = boardsService({
      repo,
      tx: (fn) => db.tx((t) => fn(boardsRepo(t))),
      tasks: {
        lookup: async (ctx, numbers) => (await tasks.call("lookupTasks", { numbers }, ctx)).tasks,
        withSubtasks: (ctx, number) => tasks.call("taskWithSubtasks", { number }, ctx),
      },
    });
    every(60 * 60_000, "idempotency sweep", () => repo.idempotency.sweep());
    every(60 * 60_000, "rollover sweep", () => repo.sweepRollovers());
    serve(boardsRpc, boardsHandlers(svc));
    const rollovers = await startRolloversConsumer({ nc, namespace, log, boards: svc, health });
    onStop(() => rollovers.stop());
  },
});
