import { z } from "zod";
import { ContentType, FileName, FileSize, UploadTarget } from "./attachments.js";
import { CreatedAt, EXAMPLE_INSTANT, Label, OpaqueId, PageQuery, Timestamp, page } from "./common.js";

// Imports: a file uploaded as for attachments, then read by a job on a JetStream work queue.

const IMPORT_ID = "imp_6yH3nK8pQ2mT5vL9xD4rW7";

export const IMPORT_FORMATS = ["jsonl", "csv"] as const;
export const ImportFormat = z.enum(IMPORT_FORMATS);
export type ImportFormat = z.infer<typeof ImportFormat>;

export const IMPORT_STATUSES = ["queued", "running", "succeeded", "failed"] as const;
export const ImportStatus = z.enum(IMPORT_STATUSES);
export type ImportStatus = z.infer<typeof ImportStatus>;

/** The media types an import file may be declared as, by the format each may hold (text/plain either). */
export const IMPORT_CONTENT_TYPES = {
  "application/x-ndjson": ["jsonl"],
  "application/jsonl": ["jsonl"],
  "application/x-jsonlines": ["jsonl"],
  "text/csv": ["csv"],
  "application/csv": ["csv"],
  // What some systems declare a .csv file as.
  "application/vnd.ms-excel": ["csv"],
  "text/plain": ["jsonl", "csv"],
} as const satisfies Record<string, readonly ImportFormat[]>;
export type ImportContentType = keyof typeof IMPORT_CONTENT_TYPES;

/** The media type without parameters, lower-cased; and whether a charset parameter, if any, is UTF-8. */
export function importMediaType(contentType: string): { type: string; utf8: boolean } {
  const [type = "", ...params] = contentType.split(";").map((p) => p.trim());
  const charset = params.find((p) => p.toLowerCase().startsWith("charset="));
  const value = charset?.slice("charset=".length).replace(/"/g, "").toLowerCase();
  return { type: type.toLowerCase(), utf8: value === undefined || value === "utf-8" || value === "utf8" };
}

/** What the importer says about a line; `unknown_column` is a notice on the CSV header, not a failed line. */
export const IMPORT_ERROR_CODES = [
  "invalid_json",
  "invalid_csv",
  "line_too_long",
  "unknown_object",
  "validation_failed",
  "unknown_reference",
  "not_a_member",
  "conflict",
  "dependency_cycle",
  "missing_column",
  "unknown_column",
  "file_unreadable",
  "stopped",
] as const;
export const ImportErrorCode = z.enum(IMPORT_ERROR_CODES);
export type ImportErrorCode = z.infer<typeof ImportErrorCode>;

/** At most this many line errors are kept per import: the first ones. */
export const MAX_IMPORT_ERRORS = 100;

export const ImportLineError = z.object({
  line: z
    .number()
    .int()
    .meta({
      description: "The line of the file, from 1; in a CSV file, the row (the header is line 1; a quoted line break does not start a row).",
      examples: [3],
    }),
  pointer: z.string().meta({
    description: "A JSON pointer into the line's object (JSONL), or `/<column>` (CSV); empty when the whole line is at fault.",
    examples: ["/title"],
  }),
  code: ImportErrorCode.meta({
    description:
      "`invalid_json`, `invalid_csv` (quoting, number of columns), `line_too_long`, `unknown_object`, `validation_failed` (as the create route would refuse it), `unknown_reference` (a task, project, label, custom field or option the file does not define before the line, or whose line failed), `not_a_member` (an email of nobody in this organization), `conflict` (a custom field of that key and another type exists, or no room for another field), `dependency_cycle`, `missing_column` (the whole file fails), `unknown_column` (a CSV column the import ignores: a notice, the file goes on), `file_unreadable` (the whole file fails) or `stopped` (a chunk of lines kept failing for reasons of the service's own; the lines before it are imported).",
    examples: ["validation_failed"],
  }),
  detail: z.string().meta({ description: "What is wrong, in a sentence.", examples: ["must be at most 500 characters"] }),
});
export type ImportLineError = z.infer<typeof ImportLineError>;

export const Import = z.object({
  id: z.string().meta({ description: "The import's id.", examples: [IMPORT_ID] }),
  status: ImportStatus.meta({
    description:
      "`queued` until a worker takes it, `running`, then `succeeded` (every line read; some may have failed, see counts and errors) or `failed` (the file as a whole could not be imported, see errors).",
    examples: ["running"],
  }),
  dry_run: z.boolean().meta({ description: "Whether the file is only checked: nothing is created, not even projects or labels.", examples: [false] }),
  progress: z
    .object({
      done: z
        .number()
        .int()
        .meta({ description: "Bytes of the file read and dealt with.", examples: [524288] }),
      total: z
        .number()
        .int()
        .meta({ description: "The file's size in bytes.", examples: [1048576] }),
    })
    .meta({ description: "How far the worker is, in bytes of the file.", examples: [{ done: 524288, total: 1048576 }] }),
  counts: z
    .object({
      created: z
        .number()
        .int()
        .meta({ description: "Tasks created (in a dry run: tasks that would be).", examples: [4210] }),
      failed: z
        .number()
        .int()
        .meta({ description: "Lines that failed and were left out.", examples: [3] }),
    })
    .meta({ description: "What the lines read so far came to.", examples: [{ created: 4210, failed: 3 }] }),
  errors: z.array(ImportLineError).meta({ description: `The first ${MAX_IMPORT_ERRORS} problems found, in the file's order.`, examples: [[]] }),
  created_at: CreatedAt,
  completed_at: Timestamp.nullable().meta({ description: "When it succeeded or failed (UTC, ISO 8601); null before.", examples: [EXAMPLE_INSTANT] }),
});
export type Import = z.infer<typeof Import>;

const FILE_KEY = { description: "The uploaded file's key, from `POST /v1/imports/uploads`, after the PUT of its bytes.", examples: ["imp/org_3kTM…/upl_…"] };

const IMPORT_TYPE_LIST = Object.keys(IMPORT_CONTENT_TYPES).join(", ");
export const StartImportUploadBody = z.strictObject({
  file_name: FileName.meta({ description: "The file's name (one line).", examples: ["tasks.csv"] }),
  content_type: ContentType.meta({
    description: `The file's media type, one of ${IMPORT_TYPE_LIST}; a charset, if given, must be UTF-8.`,
    examples: ["text/csv"],
  }),
  size: FileSize.meta({ description: "The file's size in bytes (the service's largest import file or less).", examples: [1048576] }),
});
export type StartImportUploadBody = z.infer<typeof StartImportUploadBody>;

export const CreateImportBody = z.strictObject({
  file_key: Label.min(1).max(1024).meta(FILE_KEY),
  format: ImportFormat.meta({
    description:
      "`jsonl`: this API's own export, one object a line; `csv`: a header row naming some of title, description, status, priority, due_date, project, labels, assignee (title required), then one task a row.",
    examples: ["csv"],
  }),
  dry_run: z
    .boolean()
    .optional()
    .meta({ description: "Only check every line and report what would fail; nothing is created (default false).", examples: [false] }),
});
export type CreateImportBody = z.infer<typeof CreateImportBody>;

export const ImportParams = z.object({ import_id: OpaqueId.meta({ description: "The import's id.", examples: [IMPORT_ID] }) });

/** One message per import; the import's row says how far it got, so a message that comes again goes on from there. */
export const ImportJob = z.object({ organization_id: z.string().min(1), import_id: z.string().min(1) });
export type ImportJob = z.infer<typeof ImportJob>;

export const importJobs = {
  run: {
    stream: (namespace: string) => `${namespace}_task_imports`,
    subject: (namespace: string) => `${namespace}.cmd.tasks.import`,
    schema: ImportJob,
    /** Queued again by a sweep while the import is unfinished: the duplicate window keeps one message at a time. */
    msgId: (j: ImportJob) => `import.${j.import_id}`,
  },
} as const;

export const importOps = {
  startImportUpload: {
    input: StartImportUploadBody,
    output: z.object({ file_key: z.string(), expires_at: Timestamp, target: UploadTarget }),
  },
  createImport: { input: CreateImportBody, output: Import },
  getImport: { input: ImportParams, output: Import },
  listImports: { input: PageQuery, output: page(Import) },
} as const;
