import { type Caller, DEFAULT_LABEL_COLOR, type TaskLabel } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import { LabelNameTaken, type LabelPatch } from "../repo/labels-repo.js";
import { notFound } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { keyedWrites } from "./writes.js";

function nameTaken(e: unknown): never {
  if (e instanceof LabelNameTaken) throw fieldError("/name", "a label with this name already exists in the organization (names are compared ignoring case)");
  throw e;
}

/** One spelling of a colour, so that clients can compare two by their text. */
const colorOf = (color: string | undefined) => color?.toLowerCase();

export function labelsSystem(res: TasksResources) {
  const { repos } = res;
  const write = keyedWrites(res);
  return {
    async createLabel(c: Caller, b: { name: string; color?: string | undefined; description?: string | null | undefined }): Promise<TaskLabel> {
      const label = { name: b.name, color: colorOf(b.color) ?? DEFAULT_LABEL_COLOR, description: b.description ?? null };
      return write(c, "createLabel", (r) => r.labels.insert(c.organizationId, label).catch(nameTaken));
    },

    async getLabel(c: Caller, id: string): Promise<TaskLabel> {
      const l = await repos.labels.get(c.organizationId, id);
      if (!l) throw notFound("label");
      return l;
    },

    listLabels: (c: Caller, limit: number, after: string | undefined) => repos.labels.list(c.organizationId, limit, after),

    async updateLabel(c: Caller, id: string, patch: LabelPatch): Promise<TaskLabel> {
      const p = { ...patch, color: colorOf(patch.color) };
      return write(c, "updateLabel", async (r) => {
        const l = await r.labels.update(c.organizationId, id, p).catch(nameTaken);
        if (!l) throw notFound("label");
        return l;
      });
    },

    /**
     * The row and a removal mark go in one transaction: from its commit reads leave the label out,
     * and the removal work (queued after it, queued again by a sweep if that is lost) takes it off
     * every task as a new version each.
     */
    async deleteLabel(c: Caller, id: string): Promise<{ id: string }> {
      const org = c.organizationId;
      await res.tx(async (r) => {
        if (!(await r.labels.remove(org, id))) throw notFound("label");
        await r.removals.record(org, "label", id);
        await r.audit.write({ organizationId: org, action: "label.deleted", actor: c.actor, ctx: c.ctx, target: { type: "label", id } });
      });
      // Before the answer: no replica may serve a copy that still shows the label.
      res.cache.clear();
      await res.changedAll(org);
      await res.startRemoval({ organization_id: org, kind: "label", ref: id }).catch((err: unknown) => {
        res.log.warn({ err, organization_id: org, label: id }, "could not queue a label's removal; the next sweep queues it");
      });
      return { id };
    },
  };
}
export type LabelsSystem = ReturnType<typeof labelsSystem>;
