import { z } from "zod";
import { CreatedAt, OpaqueId, Text, TrimmedLabel, UpdatedAt } from "./common.js";

const LABEL_ID = "lbl_4mQ8xT2pK7nD3vB9rL5sW1";
const NAME = { description: "The label's name, unique in the organization ignoring case (compared trimmed).", examples: ["bug"] };
const COLOR = { description: "Its colour, `#rrggbb`.", examples: ["#d73a4a"] };
const DESCRIPTION = { description: "What the label means; null when none.", examples: ["Something is not working."] };

/** The colour of a label created without one. */
export const DEFAULT_LABEL_COLOR = "#8b949e";

export const TaskLabel = z.object({
  id: z.string().meta({ description: "The label's id.", examples: [LABEL_ID] }),
  name: z.string().meta(NAME),
  color: z.string().meta(COLOR),
  description: z.string().nullable().meta(DESCRIPTION),
  created_at: CreatedAt,
  updated_at: UpdatedAt,
});
export type TaskLabel = z.infer<typeof TaskLabel>;

const LabelName = TrimmedLabel.min(1, { message: "must not be empty" }).max(100);
const LabelColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, { message: "must be a colour as #rrggbb" });
const LabelDescription = Text.max(500);

export const CreateLabelBody = z.strictObject({
  name: LabelName.meta(NAME),
  color: LabelColor.optional().meta({ ...COLOR, description: `Its colour, \`#rrggbb\` (${DEFAULT_LABEL_COLOR} when omitted).` }),
  description: LabelDescription.nullable().optional().meta(DESCRIPTION),
});
export type CreateLabelBody = z.infer<typeof CreateLabelBody>;

export const UpdateLabelBody = z.strictObject({
  name: LabelName.optional().meta({ ...NAME, description: "A new name, unique in the organization ignoring case." }),
  color: LabelColor.optional().meta(COLOR),
  description: LabelDescription.nullable().optional().meta(DESCRIPTION),
});
export type UpdateLabelBody = z.infer<typeof UpdateLabelBody>;

export const LabelParams = z.object({ label_id: OpaqueId.meta({ description: "The label's id.", examples: [LABEL_ID] }) });
export const DeletedLabel = z.object({ id: z.string().meta({ description: "The deleted label's id.", examples: [LABEL_ID] }) });
