import { z } from "zod";
import { CreatedAt, Deleted, ObjectId, OpaqueId, Text, TrimmedLabel, UpdatedAt } from "./common.js";

// Projects (spec 2.6, 4.1): groups of tasks; a task may belong to several.

const DESCRIPTION = { description: "Free text (line breaks kept); null when none.", examples: ["Everything for the November launch."] };
const NAME = { description: "The project's name, unique in the organization (compared trimmed).", examples: ["Launch"] };

/** Spec 2.6. */
export const Project = z.object({
  id: ObjectId,
  name: z.string().meta(NAME),
  description: z.string().nullable().meta(DESCRIPTION),
  created_at: CreatedAt,
  updated_at: UpdatedAt,
});
export type Project = z.infer<typeof Project>;

const ProjectName = TrimmedLabel.min(1, { message: "must not be empty" }).max(200);
const ProjectDescription = Text.min(1).max(2000);
export const CreateProjectBody = z.strictObject({
  name: ProjectName.meta(NAME),
  description: ProjectDescription.optional().meta(DESCRIPTION),
});
export const UpdateProjectBody = z.strictObject({
  name: ProjectName.optional().meta({ description: "A new name, unique in the organization.", examples: ["Launch v2"] }),
  description: ProjectDescription.nullable().optional().meta(DESCRIPTION),
});

export const ProjectParams = z.object({ project_id: OpaqueId.meta({ description: "The project's id.", examples: ["prj_5vN5Zu6nSVCjmB2jJBpwRY"] }) });
export const DeletedProject = z.object({ id: ObjectId, deleted: Deleted });
