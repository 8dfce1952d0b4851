import { z } from "zod";
import { CreatedAt, OpaqueId, Text, TrimmedLabel, UpdatedAt } from "./common.js";
import { CUSTOM_FIELD_KEY } from "./tasks.js";

const FIELD_ID = "fld_7hQ2mV9xK4pT8nB3cR6wL1";
const OPTION_ID = "opt_2kP9sD4vN7qW1xH6mB3tY8";

export const CUSTOM_FIELD_TYPES = ["text", "number", "date", "select", "multi_select", "user", "checkbox", "url"] as const;
export const CustomFieldType = z.enum(CUSTOM_FIELD_TYPES);
export type CustomFieldType = z.infer<typeof CustomFieldType>;
/** The types whose values are ids of the field's own options. */
export const OPTION_TYPES = ["select", "multi_select"] as const satisfies readonly CustomFieldType[];
const PLAIN_TYPES = ["text", "number", "date", "user", "checkbox", "url"] as const satisfies readonly CustomFieldType[];

/** At most this many fields in an organization. */
export const MAX_CUSTOM_FIELDS = 50;
/** The colour of an option created without one. */
export const DEFAULT_OPTION_COLOR = "#8b949e";

const KEY = {
  description:
    "How tasks name the field (`custom_fields.<key>`, `custom.<key>` in searches): a lower-case letter, then up to 39 lower-case letters, digits or underscores; unique in the organization, fixed once created.",
  examples: ["estimate"],
};
const NAME = { description: "The field's name as people read it.", examples: ["Estimate"] };
const DESCRIPTION = { description: "What the field is for; null when none.", examples: ["Ideal days of work."] };
const OPTION_NAME = { description: "The option's name, unique in its field ignoring case (compared trimmed).", examples: ["High"] };
const OPTION_COLOR = { description: "Its colour, `#rrggbb`.", examples: ["#d73a4a"] };
const TYPE_DOC =
  "What its values are: `text`, `number`, `date` (`YYYY-MM-DD`), `select` (one option's id), `multi_select` (option ids), `user` (a member's id), `checkbox` (a boolean) or `url`. Fixed once created.";

export const CustomFieldOption = z.object({
  id: z.string().meta({ description: "The option's id, made by the service and kept when the option is renamed or recoloured.", examples: [OPTION_ID] }),
  name: z.string().meta(OPTION_NAME),
  color: z.string().meta(OPTION_COLOR),
});
export type CustomFieldOption = z.infer<typeof CustomFieldOption>;

export const CustomField = z.object({
  id: z.string().meta({ description: "The field's id.", examples: [FIELD_ID] }),
  key: z.string().meta(KEY),
  name: z.string().meta(NAME),
  type: CustomFieldType.meta({ description: TYPE_DOC, examples: ["select"] }),
  options: z.array(CustomFieldOption).meta({
    description: "The values a `select` or `multi_select` field may take (1-100), in the order given; empty for every other type.",
    examples: [[{ id: OPTION_ID, name: "High", color: "#d73a4a" }]],
  }),
  description: z.string().nullable().meta(DESCRIPTION),
  created_at: CreatedAt,
  updated_at: UpdatedAt,
});
export type CustomField = z.infer<typeof CustomField>;

/** What a write of task values checks them against. */
export type CustomFieldDefinition = Pick<CustomField, "id" | "key" | "type" | "options">;

// The key pattern task writes accept in `custom_fields`.
const FieldKey = z.string().regex(CUSTOM_FIELD_KEY, {
  message: "must be a lower-case letter followed by up to 39 lower-case letters, digits or underscores",
});
const FieldName = TrimmedLabel.min(1, { message: "must not be empty" }).max(100);
const FieldDescription = Text.max(500);
const OptionName = TrimmedLabel.min(1, { message: "must not be empty" }).max(100);
const OptionColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, { message: "must be a colour as #rrggbb" });
const NewOptionColor = OptionColor.optional().meta({ ...OPTION_COLOR, description: `Its colour, \`#rrggbb\` (${DEFAULT_OPTION_COLOR} when omitted).` });

const NewOption = z.strictObject({ name: OptionName.meta(OPTION_NAME), color: NewOptionColor });
const NewOptions = z
  .array(NewOption)
  .min(1)
  .max(100)
  .meta({
    description: "The values the field may take, 1-100, in the order shown; the service gives each an id.",
    examples: [[{ name: "High", color: "#d73a4a" }]],
  });

const common = {
  key: FieldKey.meta(KEY),
  name: FieldName.meta(NAME),
  description: FieldDescription.nullable().optional().meta(DESCRIPTION),
};

/** By `type`: only the option types take (and need) options. */
export const CreateCustomFieldBody = z.discriminatedUnion("type", [
  z.strictObject({
    type: z
      .enum(OPTION_TYPES)
      .meta({ description: "`select` (a value is one option's id) or `multi_select` (a value is 1-50 option ids).", examples: ["select"] }),
    ...common,
    options: NewOptions,
  }),
  z.strictObject({
    type: z.enum(PLAIN_TYPES).meta({
      description: "`text`, `number`, `date` (`YYYY-MM-DD`), `user` (a member's id), `checkbox` (a boolean) or `url`; these take no options.",
      examples: ["number"],
    }),
    ...common,
  }),
]);
export type CreateCustomFieldBody = z.infer<typeof CreateCustomFieldBody>;

const KeptOrNewOption = z.strictObject({
  id: OpaqueId.optional().meta({
    description: "An existing option's id, to keep that option (with this name and colour); omitted for a new option.",
    examples: [OPTION_ID],
  }),
  name: OptionName.meta(OPTION_NAME),
  color: OptionColor.optional().meta({
    ...OPTION_COLOR,
    description: `Its colour, \`#rrggbb\` (an existing option keeps its colour when omitted; a new one gets ${DEFAULT_OPTION_COLOR}).`,
  }),
});
export type KeptOrNewOption = z.infer<typeof KeptOrNewOption>;

/** A field's key and type are fixed: naming either is refused as an unknown field. */
export const UpdateCustomFieldBody = z.strictObject({
  name: FieldName.optional().meta({ ...NAME, description: "A new name." }),
  description: FieldDescription.nullable().optional().meta(DESCRIPTION),
  options: z
    .array(KeptOrNewOption)
    .min(1)
    .max(100)
    .optional()
    .meta({
      description:
        "A `select` or `multi_select` field's options, replacing the list: an entry with an existing option's id keeps that option, one without an id is a new option, and an option left out is deleted (and removed from every task).",
      examples: [
        [
          { id: OPTION_ID, name: "Highest" },
          { name: "Low", color: "#0e8a16" },
        ],
      ],
    }),
});
export type UpdateCustomFieldBody = z.infer<typeof UpdateCustomFieldBody>;

export const CustomFieldParams = z.object({ field_id: OpaqueId.meta({ description: "The custom field's id.", examples: [FIELD_ID] }) });
export const DeletedCustomField = z.object({ id: z.string().meta({ description: "The deleted custom field's id.", examples: [FIELD_ID] }) });
