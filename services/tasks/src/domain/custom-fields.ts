import {
  type Caller,
  type CreateCustomFieldBody,
  type CustomField,
  type CustomFieldOption,
  DEFAULT_OPTION_COLOR,
  type KeptOrNewOption,
  MAX_CUSTOM_FIELDS,
  OPTION_TYPES,
  type RemovalJob,
  type UpdateCustomFieldBody,
} from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { FieldKeyTaken } from "../repo/custom-fields-repo.js";
import { notFound } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { keyedWrites } from "./writes.js";

const noField = () => notFound("custom field");

function keyTaken(e: unknown): never {
  if (e instanceof FieldKeyTaken) throw fieldError("/key", "a custom field with this key already exists in the organization");
  throw e;
}

/** One spelling of a colour, so that clients can compare two by their text. */
const colorOf = (color: string | undefined) => color?.toLowerCase();

/** Names are compared as people read them: trimmed (the contract trims) and ignoring case. */
function checkOptionNames(options: readonly CustomFieldOption[]): void {
  const seen = new Set<string>();
  options.forEach((o, i) => {
    const name = o.name.toLowerCase();
    if (seen.has(name)) throw fieldError(`/options/${i}/name`, "is the name of another option of this field (names are compared ignoring case)");
    seen.add(name);
  });
}

/**
 * A PATCH's list replaces the options: an entry with an existing option's id keeps that option
 * (renamed, recoloured; its colour stays when none is sent), one without is new, and an existing
 * option left out is deleted.
 */
function replacedOptions(existing: readonly CustomFieldOption[], entries: readonly KeptOrNewOption[]) {
  const before = new Map(existing.map((o) => [o.id, o]));
  const kept = new Set<string>();
  const options = entries.map((e, i): CustomFieldOption => {
    if (e.id === undefined) return { id: newId("opt"), name: e.name, color: colorOf(e.color) ?? DEFAULT_OPTION_COLOR };
    const old = before.get(e.id);
    if (!old) throw fieldError(`/options/${i}/id`, "is not an option of this field (leave the id out to add an option)");
    if (kept.has(e.id)) throw fieldError(`/options/${i}/id`, "names an option listed before it");
    kept.add(e.id);
    return { id: e.id, name: e.name, color: colorOf(e.color) ?? old.color };
  });
  checkOptionNames(options);
  return { options, removed: existing.filter((o) => !kept.has(o.id)).map((o) => o.id) };
}

const hasOptions = (type: CustomField["type"]) => (OPTION_TYPES as readonly string[]).includes(type);

export function customFieldsSystem(res: TasksResources) {
  const { repos } = res;
  const write = keyedWrites(res);

  /**
   * After the commit of a delete: from that commit reads leave the values out, so no replica may
   * answer from a copy that shows them; then the work that takes them off every task is queued (a
   * sweep queues it again if this is lost).
   */
  async function afterRemoval(jobs: RemovalJob[]): Promise<void> {
    const first = jobs[0];
    if (!first) return;
    res.cache.clear();
    await res.changedAll(first.organization_id);
    for (const job of jobs) {
      await res.startRemoval(job).catch((err: unknown) => {
        res.log.warn({ err, ...job }, `could not queue a custom ${job.kind}'s removal; the next sweep queues it`);
      });
    }
  }

  return {
    async createCustomField(c: Caller, b: CreateCustomFieldBody): Promise<CustomField> {
      const org = c.organizationId;
      const options = "options" in b ? b.options.map((o) => ({ id: newId("opt"), name: o.name, color: colorOf(o.color) ?? DEFAULT_OPTION_COLOR })) : [];
      checkOptionNames(options);
      const field = { key: b.key, name: b.name, type: b.type, options, description: b.description ?? null };
      return write(c, "createCustomField", async (r) => {
        // Counted under the organization's lock, so two creates cannot both take the last place.
        if ((await r.customFields.lockOrganization(org)) >= MAX_CUSTOM_FIELDS) {
          const message = `an organization has at most ${MAX_CUSTOM_FIELDS} custom fields: delete one before creating another`;
          throw new AppError("validation_failed", `The request body is invalid: ${message}.`, { errors: [{ pointer: "/", message }] });
        }
        // Reads and the removal work know a deleted field's values by its key: a new field may not take it until they are gone.
        if (await r.customFields.keyBeingRemoved(org, b.key))
          throw fieldError("/key", "belonged to a deleted custom field whose values are still being removed from tasks; try again in a minute");
        return r.customFields.insert(org, field).catch(keyTaken);
      });
    },

    async getCustomField(c: Caller, id: string): Promise<CustomField> {
      const f = await repos.customFields.get(c.organizationId, id);
      if (!f) throw noField();
      return f;
    },

    listCustomFields: (c: Caller, limit: number, after: string | undefined) => repos.customFields.list(c.organizationId, limit, after),

    /**
     * The row is locked first: the options are worked out from it, and a task write checking a
     * value against the old options (it holds the row for share) finishes before, or sees the new
     * ones after. Options it deletes get a removal mark in the same transaction, as a deleted label does.
     */
    async updateCustomField(c: Caller, id: string, patch: UpdateCustomFieldBody): Promise<CustomField> {
      const org = c.organizationId;
      const { field, removed } = await res.tx(async (r) => {
        const before = await r.customFields.get(org, id, true);
        if (!before) throw noField();
        let change: ReturnType<typeof replacedOptions> | undefined;
        if (patch.options !== undefined) {
          if (!hasOptions(before.type)) throw fieldError("/options", `only a select or multi_select field has options; this field is of type ${before.type}`);
          change = replacedOptions(before.options, patch.options);
        }
        const updated = await r.customFields.update(org, id, { name: patch.name, description: patch.description, options: change?.options });
        if (!updated) throw noField();
        for (const option of change?.removed ?? []) await r.removals.record(org, "option", option, before.key);
        return { field: updated, removed: change?.removed ?? [] };
      });
      await afterRemoval(removed.map((ref) => ({ organization_id: org, kind: "option", ref })));
      return field;
    },

    /** The row and a removal mark go in one transaction, as for a deleted label. */
    async deleteCustomField(c: Caller, id: string): Promise<{ id: string }> {
      const org = c.organizationId;
      await res.tx(async (r) => {
        // Under the organization's lock: a create of the same key waits, then sees the removal mark.
        await r.customFields.lockOrganization(org);
        const key = await r.customFields.remove(org, id);
        if (key === undefined) throw noField();
        await r.removals.record(org, "field", id, key);
        await r.audit.write({
          organizationId: org,
          action: "custom_field.deleted",
          actor: c.actor,
          ctx: c.ctx,
          target: { type: "custom_field", id },
          changes: { key: { from: key, to: null } },
        });
      });
      await afterRemoval([{ organization_id: org, kind: "field", ref: id }]);
      return { id };
    },
  };
}
export type CustomFieldsSystem = ReturnType<typeof customFieldsSystem>;
