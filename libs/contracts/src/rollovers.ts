import { RollOverInput } from "./boards.js";

/**
 * Rollover requests travel one way: the tasks service's recurrence scheduler publishes them on a
 * JetStream stream it owns, and the boards service consumes them. So the tasks service never
 * calls the boards service, and the only dependency between the two runs boards → tasks (titles
 * by RPC, rollovers by stream).
 */
export const rolloverMessages = {
  request: {
    stream: (namespace: string) => `${namespace}_board_rollovers`,
    subject: (namespace: string) => `${namespace}.cmd.boards.rollover`,
    schema: RollOverInput,
    /** Nats-Msg-Id: one per task and day, so a request published again within the duplicate window is dropped. */
    msgId: (i: RollOverInput) => `rollover.${i.organization_id}.${i.task_number}.${i.date}`,
  },
} as const;
