import { BATCH_RUN_BYTES, TaskBatchBody, TaskBatchResponse, type TaskBatchOutcome, taskEtag } from "@tasksvc/contracts";
import { AppError, toProblem } from "@tasksvc/errors";
import { resource } from "../pipeline/resource.js";
import { parseEntityTags } from "../pipeline/preconditions.js";

function runFrom<T>(operations: readonly T[], offset: number): T[] {
  let bytes = 0;
  let end = offset;
  while (end < operations.length && (end === offset || bytes < BATCH_RUN_BYTES)) {
    bytes += Buffer.byteLength(JSON.stringify(operations[end]));
    end++;
  }
  return operations.slice(offset, end);
}

function render(o: TaskBatchOutcome, requestId: string, origin: string) {
  if ("task" in o) return { status: o.status, etag: taskEtag(o.task.version), body: o.task };
  const etag = o.error.etag;
  return { status: o.status, ...(etag === undefined ? {} : { etag }), body: toProblem(AppError.fromRpc(o.error), requestId, origin) };
}

/** Each item's body is checked by the tasks service as its single operation checks it, so a bad body fails its own item only. */
export const taskBatches = resource({ name: "tasks", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/batch",
      operationId: "batchTasks",
      summary: "Run up to 100 task writes (create, update, archive, unarchive) in order; each answers as its own operation would",
      body: TaskBatchBody,
      status: 200,
      response: TaskBatchResponse,
      idempotent: true,
      cost: "1 API call per operation against the billing period's allowance and 1 per operation against the burst limit, all or none",
    },
    async ({ clients, body, ctx, identity, charge, charger, origin }) => {
      // All or none, before any item runs: the pipeline counted the first, and gives it back if this refuses.
      if (charge !== null) await charger.chargeItems(identity, body.operations.length - 1);
      const operations = body.operations.map((op) => {
        if (op.method === "create") return op;
        const { if_match, ...rest } = op;
        return if_match === undefined ? rest : { ...rest, if_match: parseEntityTags(if_match, "If-Match") ?? [] };
      });
      // In runs that each fit a NATS message both ways; the rest is sent again from where the service stopped.
      const results: TaskBatchOutcome[] = [];
      while (results.length < operations.length) {
        const offset = results.length;
        const run = await clients.tasks.call("batchTasks", { offset, operations: runFrom(operations, offset) }, ctx);
        if (run.results.length === 0) throw new Error("the tasks service answered a batch run with no result");
        results.push(...run.results);
      }
      return { results: results.map((o) => render(o, ctx.request_id, origin)) };
    },
  );
});
