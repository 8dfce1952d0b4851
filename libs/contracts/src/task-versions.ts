import { z } from "zod";
import { Actor } from "./actor.js";
import { CreatedAt } from "./common.js";
import { Recurrence } from "./recurrence.js";
import { Task, TaskStatus } from "./tasks.js";

// A task's versions, as its history and exports show them.

const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";
const LABEL_ID = "lbl_4mQ8xT2pK7nD3vB9rL5sW1";

/** A task's content: what PATCH compares and history shows. */
const VERSION_CONTENT = Task.pick({
  title: true,
  description: true,
  status: true,
  priority: true,
  start_date: true,
  due_date: true,
  notes: true,
  story_points: true,
  project_ids: true,
  assignee_ids: true,
  label_ids: true,
  custom_fields: true,
  recurrence: true,
}).shape;
export type TaskContentField = keyof typeof VERSION_CONTENT;

/** A history item shows the content and the owner, in the task's field order. */
const { recurrence: _recurrence, assignee_ids: _assignees, label_ids: _labels, custom_fields: _custom, ...BEFORE_OWNER } = VERSION_CONTENT;

export const TaskVersion = z.object({
  id: z.string().meta({ description: "The version's id.", examples: ["ver_6yH3nK8pQ2mT5vL9xD4rW7"] }),
  version: z
    .number()
    .int()
    .meta({ description: "The task's version this content was (archiving and unarchiving take numbers of their own).", examples: [3] }),
  ...BEFORE_OWNER,
  status: TaskStatus.meta({ description: "Where the task stood in this version.", examples: ["IN_PROGRESS"] }),
  owner_id: Task.shape.owner_id,
  assignee_ids: Task.shape.assignee_ids.meta({ description: "The users the task was assigned to in this version.", examples: [[USER_ID]] }),
  label_ids: Task.shape.label_ids.meta({ description: "The task's labels in this version, as they were then.", examples: [[LABEL_ID]] }),
  custom_fields: Task.shape.custom_fields.meta({
    description: "The task's custom field values in this version, as they were then.",
    examples: [{ estimate: 3 }],
  }),
  recurrence: Recurrence.nullable().meta({ description: "How the task repeated in this version; null when it did not.", examples: [null] }),
  created_at: CreatedAt,
  actor: Actor.nullable().meta({
    description:
      "Who wrote this version: the credential (`api_key`, `oauth_client`, `user` for an access token of another issuer), `system` for the service's own work (an occurrence of a recurring task, a deleted label or custom field taken off the task) or an administrator's command, `rewind` for an undo. Null when not recorded: versions written before the service recorded actors.",
    examples: [{ type: "api_key", id: "key_2bN8xQ4mT7pL1vD9kR3sW6", user_id: "usr_7hQ2mD9xK3pL5nB8vR4tW1" }],
  }),
});
export type TaskVersion = z.infer<typeof TaskVersion>;
