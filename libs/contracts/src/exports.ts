import { z } from "zod";
import { UploadTarget } from "./attachments.js";
import { CreatedAt, EXAMPLE_INSTANT, OpaqueId, PageQuery, Timestamp, page } from "./common.js";

// Exports of an organization's content as a job: asked for, run on a work queue, fetched by a signed link.

const EXPORT_ID = "exp_4nK8xQ2mT7pL9vD3bR5sW6";
const LATER_INSTANT = "2026-11-24T09:31:12.000Z";

export const EXPORT_FORMATS = ["jsonl", "csv"] as const;
export const ExportFormat = z.enum(EXPORT_FORMATS);
export type ExportFormat = z.infer<typeof ExportFormat>;

/** What an export may carry; the order in which JSONL lines come is the format's own (members first, then these). */
export const EXPORT_PARTS = ["tasks", "history", "comments", "projects", "labels", "custom_fields"] as const;
export const ExportPart = z.enum(EXPORT_PARTS);
export type ExportPart = z.infer<typeof ExportPart>;
/** One row a task: a CSV has no room for versions or comments. */
export const CSV_PARTS = ["tasks", "projects", "labels", "custom_fields"] as const satisfies readonly ExportPart[];

/** Shared by every job of the API (exports, imports): how far it got. */
export const JOB_STATUSES = ["queued", "running", "succeeded", "failed"] as const;
export const JobStatus = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatus>;

export const JobProgress = z.object({
  done: z
    .number()
    .int()
    .meta({ description: "Items done so far.", examples: [1200] }),
  total: z
    .number()
    .int()
    .meta({ description: "Items in all, known once the job runs (0 before).", examples: [5000] }),
});
export type JobProgress = z.infer<typeof JobProgress>;

export const JobError = z.object({
  code: z.string().meta({ description: "What went wrong, as an error code of the API.", examples: ["internal_error"] }),
  detail: z.string().meta({ description: "What went wrong, for people.", examples: ["The export failed three times; ask for a new one."] }),
});
export type JobError = z.infer<typeof JobError>;

const INCLUDE = {
  description:
    "What the file carries: any of `tasks`, `history` (every version of every task), `comments`, `projects`, `labels`, `custom_fields`, each once. Default: all a format carries (a CSV: `tasks`, `projects`, `labels`, `custom_fields`; it needs `tasks` and has no `history` or `comments`).",
  examples: [["tasks", "projects", "labels", "custom_fields"]],
};

export const CreateExportBody = z
  .strictObject({
    format: ExportFormat.meta({
      description:
        "`jsonl`: one JSON object a line, each with an `object` field, in an order an importer can stream; `csv`: one row a task, with a header row.",
      examples: ["jsonl"],
    }),
    include: z
      .array(ExportPart)
      .min(1)
      .max(EXPORT_PARTS.length)
      .refine((a) => new Set(a).size === a.length, { message: "must not repeat a part" })
      .optional()
      .meta(INCLUDE),
  })
  .superRefine((b, ctx) => {
    if (b.format !== "csv" || b.include === undefined) return;
    if (!b.include.includes("tasks")) ctx.addIssue({ code: "custom", path: ["include"], message: "a CSV export is one row a task: it must include tasks" });
    const other = b.include.find((p) => !(CSV_PARTS as readonly string[]).includes(p));
    if (other !== undefined) ctx.addIssue({ code: "custom", path: ["include"], message: `a CSV export cannot carry ${other}: ask for jsonl` });
  });
export type CreateExportBody = z.infer<typeof CreateExportBody>;

/** The parts an export carries when the request names none. */
export function exportParts(b: CreateExportBody): ExportPart[] {
  return b.include ?? [...(b.format === "csv" ? CSV_PARTS : EXPORT_PARTS)];
}

const fields = {
  id: z.string().meta({ description: "The export's id.", examples: [EXPORT_ID] }),
  status: JobStatus.meta({
    description: "`queued`, then `running`, then `succeeded` (the file is ready) or `failed` (see `error`).",
    examples: ["succeeded"],
  }),
  format: ExportFormat.meta({ description: "The file's format.", examples: ["jsonl"] }),
  include: z
    .array(ExportPart)
    .meta({ description: "What the file carries.", examples: [["tasks", "history", "comments", "projects", "labels", "custom_fields"]] }),
  progress: JobProgress.meta({ description: "Tasks written so far, of the tasks the export holds.", examples: [{ done: 5000, total: 5000 }] }),
};
const tail = {
  expires_at: Timestamp.nullable().meta({
    description: "When the file and its link stop working (UTC, ISO 8601; 24 hours after the export succeeded); null until then.",
    examples: ["2026-11-25T09:31:12.000Z"],
  }),
  error: JobError.nullable().meta({ description: "Why the export failed; null unless `failed`.", examples: [null] }),
  created_at: CreatedAt,
  completed_at: Timestamp.nullable().meta({ description: "When it succeeded or failed (UTC, ISO 8601); null before.", examples: [LATER_INSTANT] }),
};

export const Export = z.object({
  ...fields,
  download_url: z
    .string()
    .nullable()
    .meta({ description: "A signed link answering the file, until `expires_at`; null until the export succeeded and after it expired.", examples: [null] }),
  ...tail,
});
export type Export = z.infer<typeof Export>;

/** As the tasks service answers it: the gateway makes `download_url` of `download`, since only it knows the public origin. */
export const ExportView = z.object({ ...fields, download: UploadTarget.nullable(), ...tail });
export type ExportView = z.infer<typeof ExportView>;

export const ExportParams = z.object({ export_id: OpaqueId.meta({ description: "The export's id.", examples: [EXPORT_ID] }) });

export const EXPORT_EXAMPLE: Export = {
  id: EXPORT_ID,
  status: "succeeded",
  format: "jsonl",
  include: [...EXPORT_PARTS],
  progress: { done: 5000, total: 5000 },
  download_url: "https://api.example.com/v1/downloads/k1.eyJ…",
  expires_at: "2026-11-25T09:31:12.000Z",
  error: null,
  created_at: EXAMPLE_INSTANT,
  completed_at: LATER_INSTANT,
};

export const exportOps = {
  createExport: { input: CreateExportBody, output: ExportView },
  getExport: { input: ExportParams, output: ExportView },
  listExports: { input: PageQuery, output: page(ExportView) },
} as const;

/** The work of one export, on a JetStream work queue: the exports row says what is left to do. */
export const ExportJob = z.object({ organization_id: z.string().min(1), export_id: z.string().min(1) });
export type ExportJob = z.infer<typeof ExportJob>;

export const exportJobs = {
  stream: (namespace: string) => `${namespace}_task_exports`,
  subject: (namespace: string) => `${namespace}.cmd.tasks.export`,
  schema: ExportJob,
  /** Published again by a sweep while the export waits: the duplicate window keeps one message at a time. */
  msgId: (j: ExportJob) => `export.${j.export_id}`,
} as const;
