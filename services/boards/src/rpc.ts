import { type boardsRpc, callerOf } from "@tasksvc/contracts";
import type { Handlers } from "@tasksvc/nats";
import type { BoardsService } from "./domain/boards-service.js";

export function boardsHandlers(svc: BoardsService): Handlers<typeof boardsRpc> {
  return {
    getBoard: (i, ctx) => svc.board(callerOf(ctx), i.date),
    setSectionStatus: (i, ctx) => svc.setStatus(callerOf(ctx), i.date, i.section, i.status),
    planEntry: (i, ctx) => svc.plan(callerOf(ctx), i),
    deleteEntry: (i, ctx) => svc.remove(callerOf(ctx), i.entry_id),
    rollOver: (i) => svc.rollOver(i),
  };
}
