import { RollOverInput } from "./boards.js";

/** Published by the tasks service, consumed by the boards service, so the tasks service never calls boards. */
export const rolloverMessages = {
  request: {
    stream: (namespace: string) => `${namespace}_board_rollovers`,
    subject: (namespace: string) => `${namespace}.cmd.boards.rollover`,
    schema: RollOverInput,
    /** One per task and day, so a request published again within the duplicate window is dropped. */
    msgId: (i: RollOverInput) => `rollover.${i.organization_id}.${i.task_number}.${i.date}`,
  },
} as const;
