import { z } from "zod";
import {
  CreatedAt,
  Deleted,
  EXAMPLE_INSTANT,
  Label,
  NO_BIDI_CONTROLS_MESSAGE,
  noBidiControls,
  ObjectId,
  OpaqueId,
  PageQuery,
  Timestamp,
  page,
} from "./common.js";
import { TaskIdParam } from "./tasks.js";

// Attachments (spec 2.4, 2.5, 4, 4.1 "two phases", 8; decision 0016).

const ATTACHMENT_ID = { description: "The attachment's id.", examples: ["att_9pL2xQ7mT4vK1nD8bR5sW3"] };
const FILE_NAME = {
  description:
    "The file's name, as given at upload (sent back in Content-Disposition). One line; bidirectional controls (U+202A-U+202E, U+2066-U+2069), which can make a name display as another, are refused.",
  examples: ["notes.txt"],
};
const CONTENT_TYPE = { description: "The file's media type.", examples: ["text/plain"] };
const SIZE = { description: "The file's size in bytes.", examples: [12] };
const FILE_KEY = { description: "The uploaded object's key: register it as an attachment after the PUT.", examples: ["att/org_3kTM…/upl_…"] };
const EXPIRES_AT = { description: "When it stops working (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] };

export const Attachment = z.object({
  id: z.string().meta(ATTACHMENT_ID),
  file_name: z.string().meta(FILE_NAME),
  content_type: z.string().meta(CONTENT_TYPE),
  size: z.number().int().meta(SIZE),
  created_at: CreatedAt,
});
export type Attachment = z.infer<typeof Attachment>;

export const UploadTicket = z.object({
  upload_url: z.string().meta({
    description: "Where to send the bytes: PUT exactly `size` bytes here before `expires_at`.",
    examples: ["https://api.example.com/v1/uploads/k1.eyJ…"],
  }),
  upload_method: z.literal("PUT").meta({ description: "The HTTP method for upload_url.", examples: ["PUT"] }),
  file_key: z.string().meta(FILE_KEY),
  expires_at: Timestamp.meta(EXPIRES_AT),
});
export type UploadTicket = z.infer<typeof UploadTicket>;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the range excludes control characters from quoted parameter values (RFC 9110 qdtext)
const MEDIA_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\\\u0000-\u001f]*"|[A-Za-z0-9!#$&^_.+-]+))*$/;
export const ContentType = Label.min(1).max(255).regex(MEDIA_TYPE, { message: "must be a media type such as application/pdf or text/plain; charset=utf-8" });
/** A download is saved under this name, so nothing in it may reorder how it displays. */
export const FileName = Label.min(1).max(255).refine(noBidiControls, { message: NO_BIDI_CONTROLS_MESSAGE });
/** At most 2^53 - 1: the plan's max file size refuses far sooner. */
export const FileSize = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

export const StartUploadBody = z.strictObject({ file_name: FileName.meta(FILE_NAME), content_type: ContentType.meta(CONTENT_TYPE), size: FileSize.meta(SIZE) });
export type StartUploadBody = z.infer<typeof StartUploadBody>;

export const RegisterAttachmentBody = z.strictObject({
  file_name: FileName.meta(FILE_NAME),
  file_key: Label.min(1).max(1024).meta(FILE_KEY),
  content_type: ContentType.meta(CONTENT_TYPE),
  size: FileSize.meta(SIZE),
});
export type RegisterAttachmentBody = z.infer<typeof RegisterAttachmentBody>;

export const AttachmentParams = z.object({ task_id: TaskIdParam, attachment_id: OpaqueId.meta(ATTACHMENT_ID) });

export const DeletedAttachment = z.object({ id: ObjectId, deleted: Deleted });

export const DownloadLink = z.object({
  download_url: z.string().meta({ description: "A short-lived link answering the file's bytes.", examples: ["https://api.example.com/v1/downloads/k1.eyJ…"] }),
  expires_at: Timestamp.meta(EXPIRES_AT),
});
export type DownloadLink = z.infer<typeof DownloadLink>;

/** Resolved by the gateway with the credential. */
const StorageLimits = z.object({ max_file_size: z.number().int().positive(), storage: z.number().int().positive() });

export const UploadTarget = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("gateway"), capability: z.string() }),
  z.object({ kind: z.literal("direct"), url: z.string() }),
]);
export type UploadTarget = z.infer<typeof UploadTarget>;

export const ClaimedUpload = z.object({ file_key: z.string(), size: z.number().int(), content_type: z.string() });
export const OpenedDownload = z.object({ file_key: z.string(), file_name: z.string(), content_type: z.string(), size: z.number().int() });

export const attachmentOps = {
  startUpload: {
    input: StartUploadBody.extend({ task_id: OpaqueId, limits: StorageLimits }),
    output: z.object({ file_key: z.string(), expires_at: Timestamp, target: UploadTarget }),
  },
  registerAttachment: { input: RegisterAttachmentBody.extend({ task_id: OpaqueId }), output: Attachment },
  listAttachments: { input: PageQuery.extend({ task_id: OpaqueId }), output: page(Attachment) },
  downloadAttachment: {
    input: AttachmentParams,
    output: z.object({ expires_at: Timestamp, target: UploadTarget }),
  },
  deleteAttachment: { input: AttachmentParams, output: DeletedAttachment },
  /** Internal (the gateway's upload route): a capability takes one PUT. */
  claimUpload: { input: z.object({ capability: z.string().max(4096) }), output: ClaimedUpload },
  completeUpload: { input: z.object({ file_key: z.string() }), output: z.object({ completed: z.boolean() }) },
  /** The claimed PUT failed (size, connection), so the ticket takes a PUT again. */
  releaseUpload: { input: z.object({ file_key: z.string() }), output: z.object({ released: z.boolean() }) },
  openDownload: { input: z.object({ capability: z.string().max(4096) }), output: OpenedDownload },
  /** Open reservations not included. */
  storageUsage: { input: z.object({}), output: z.object({ used_bytes: z.number().int() }) },
} as const;
