import { CreateRewindBody, Rewind, RewindParams } from "@tasksvc/contracts";
import { WithStatus } from "../pipeline/operation.js";
import { resource } from "../pipeline/resource.js";

/** An undo writes tasks (new versions, the trash), so it needs tasks:write; its dry run changes nothing but answers the same plan. */
export const rewinds = resource({ name: "rewinds", scope: "tasks:write" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/rewinds",
      operationId: "createRewind",
      summary:
        "Undo what one credential, request or batch wrote within a time window: a dry run (the default) answers the plan (200); otherwise the undo runs (202) and is polled by its id",
      body: CreateRewindBody,
      status: 202,
      otherStatuses: { 200: "A dry run: the plan, nothing changed" },
      response: Rewind,
      idempotent: true,
      errors: ["limit_reached"],
    },
    async ({ clients, body, ctx }) => {
      const r = await clients.tasks.call("createRewind", body, ctx);
      return new WithStatus(r.dry_run ? 200 : 202, r);
    },
  );
  r.op(
    {
      method: "GET",
      url: "/v1/rewinds/:rewind_id",
      operationId: "getRewind",
      summary: "A rewind: its status, its plan or what it did, task by task, and its counts",
      scope: "tasks:read",
      params: RewindParams,
      response: Rewind,
      errors: ["resource_not_found"],
    },
    ({ clients, params, ctx }) => clients.tasks.call("getRewind", params, ctx),
  );
});
