import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { boardsRpc, TasksChanged, tasksChangedSubject, tasksRpc } from "@tasksvc/contracts";
import { decodeJson } from "@tasksvc/nats";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { startPurgedTasksConsumer } from "./consumers/purged-tasks.js";
import { startRolloversConsumer } from "./consumers/rollovers.js";
import { boardsService } from "./domain/boards-service.js";
import { boardsResources } from "./domain/resources.js";
import { summaryCache } from "./domain/summary-cache.js";
import { boardsHandlers } from "./rpc.js";

/** Task numbers asked at once: 400 summaries at their longest (about 1.7 kB each) stay far under max_payload. */
const LOOKUP_CHUNK = 400;

export const BoardsConfig = z.object({ ...serviceSettings, RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS });
export type BoardsConfig = z.output<typeof BoardsConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/** Depends on the tasks service (RPC, its rollover stream, its task.purged events); the tasks service never calls it. */
export const service = defineService({
  name: "boards",
  schema: "boards",
  migrations: MIGRATIONS_DIR,
  config: BoardsConfig,
  async start({ cfg, db, nc, namespace, log, health, serve, client, every, onStop }) {
    const tasks = client(tasksRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
    const summaries = summaryCache();
    // Every replica hears every change (no queue group). A callback, not an iterator, subscribed before
    // serving: it runs in arrival order with the RPC subscriptions, before any request published after it.
    const changes = nc.subscribe(tasksChangedSubject(namespace), {
      callback: (err, msg) => {
        if (err) return void log.error({ err }, "task change subscription error");
        const m = TasksChanged.safeParse(decodeJson(msg.data));
        if (m.success && m.data.all !== true) summaries.invalidate(m.data.organization_id, m.data.numbers);
        else summaries.clear();
      },
    });
    onStop(() => changes.unsubscribe());
    // Broadcasts may be lost while disconnected: forget every copy on any connection trouble.
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect" || s.type === "reconnect" || s.type === "slowConsumer") summaries.clear();
      }
    })();
    const res = boardsResources(
      db,
      {
        lookup: async (ctx, numbers) => {
          const found = [];
          for (let i = 0; i < numbers.length; i += LOOKUP_CHUNK) {
            found.push(...(await tasks.call("lookupTasks", { numbers: numbers.slice(i, i + LOOKUP_CHUNK) }, ctx)).tasks);
          }
          return found;
        },
        withSubtasks: (ctx, number, owner, limit) => tasks.call("taskWithSubtasks", { number, owner_user_id: owner, limit }, ctx),
      },
      // On a cluster the broadcast may take another route or be lost (decision 0017). Read per request:
      // a reconnect may land elsewhere.
      { summaries, servesCopies: () => nc.info !== undefined && nc.info.cluster === undefined },
    );
    const { repo } = res;
    const svc = boardsService(res);
    every(60 * 60_000, "idempotency sweep", () => repo.idempotency.sweep());
    every(60 * 60_000, "rollover sweep", () => repo.sweepRollovers());
    serve(boardsRpc, boardsHandlers(svc));
    const rollovers = await startRolloversConsumer({ nc, namespace, log, boards: svc, health });
    onStop(() => rollovers.stop());
    // The tasks service erases a task's rows; its board entries are this service's to remove.
    const purged = await startPurgedTasksConsumer({ nc, namespace, log, repo, health });
    onStop(() => purged.stop());
  },
});
