import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { NOTIFICATION_RETENTION_DAYS, notificationsRpc, systemContext, tasksRpc } from "@tasksvc/contracts";
import { deleteInBatches } from "@tasksvc/db";
import { pageBudget } from "@tasksvc/nats";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { startTaskEventsConsumer } from "./consumers/task-events.js";
import { inboxSystem } from "./domain/inbox.js";
import { ingestSystem } from "./domain/ingest.js";
import { notificationsResources } from "./domain/resources.js";
import { notificationsHandlers } from "./rpc.js";

export const NotificationsConfig = z.object({ ...serviceSettings, RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS });
export type NotificationsConfig = z.output<typeof NotificationsConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/** Followers asked per request, and at most this many pages: a comment tells at most 10,000 followers. */
const FOLLOWER_PAGE = 100;
const FOLLOWER_PAGES = 100;
/** An erasure is remembered a day past the task event stream's age (7 days). */
const ERASED_KEPT_DAYS = 8;
/** Rows deleted per statement by the retention sweep. */
const SWEEP_BATCH = 1_000;

/** Depends on the tasks service (its event stream, and its followers by RPC); nothing calls this one but the gateway. */
export const service = defineService({
  name: "notifications",
  schema: "notifications",
  migrations: MIGRATIONS_DIR,
  config: NotificationsConfig,
  async start({ cfg, db, nc, namespace, log, health, serve, client, every, onStop }) {
    const tasks = client(tasksRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
    const res = notificationsResources(db, {
      log,
      pageBytes: pageBudget(nc),
      tasks: {
        async followers(organizationId, taskNumber) {
          const ctx = systemContext(`notifications_${randomUUID()}`);
          const users: string[] = [];
          let after: string | undefined;
          for (let i = 0; i < FOLLOWER_PAGES; i++) {
            const page = await tasks.call(
              "followersOf",
              { organization_id: organizationId, task_number: taskNumber, limit: FOLLOWER_PAGE, ...(after ? { after } : {}) },
              ctx,
            );
            users.push(...page.data.map((f) => f.user_id));
            if (!page.has_more || page.next_cursor === null) break;
            after = page.next_cursor;
          }
          return users;
        },
      },
    });
    const ingest = ingestSystem(res);
    every(60 * 60_000, "notification retention sweep", async () => {
      await deleteInBatches(SWEEP_BATCH, () => res.repo.sweepBatch(NOTIFICATION_RETENTION_DAYS, SWEEP_BATCH));
      await deleteInBatches(SWEEP_BATCH, () => res.repo.sweepMentions(NOTIFICATION_RETENTION_DAYS, SWEEP_BATCH));
      await deleteInBatches(SWEEP_BATCH, () => res.repo.sweepErased(ERASED_KEPT_DAYS, SWEEP_BATCH));
    });
    // Every minute, the tasks erased in the last two: a notification an event left at the moment of an erasure is gone within a minute.
    every(60_000, "erased tasks' stragglers", () => ingest.forgetStragglers(120).then(() => undefined));
    // Stopped after serving stops (reverse order), before NATS drains and the pool ends.
    const consumer = await startTaskEventsConsumer({ nc, namespace, log, ingest, health });
    onStop(() => consumer.stop());
    serve(notificationsRpc, notificationsHandlers(inboxSystem(res)));
  },
});
