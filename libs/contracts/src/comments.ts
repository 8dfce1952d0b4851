import { z } from "zod";
import { CreatedAt, EXAMPLE_INSTANT, OpaqueId, PageQuery, page, Text, Timestamp, UpdatedAt } from "./common.js";
import { TaskIdParam } from "./tasks.js";

const COMMENT_ID = "cmt_3vK8nQ2xT7mD4pL9bR5sW6";
const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";
const OTHER_USER_ID = "usr_2bN6kP8vT3mQ9xD4rL7sW5";

/** Characters after trimming, as zod counts them (UTF-16 code units). */
export const MAX_COMMENT_BODY = 20_000;
/** Each is a member looked up before the write; a comment naming more is refused. */
export const MAX_COMMENT_MENTIONS = 50;
/** `<@usr_…>`: the id as the API shows it, between `<@` and `>`. */
export const MENTION_PATTERN = /<@(usr_[A-Za-z0-9]{1,60})>/g;

/** Ids mentioned in `body`, once each, in order of first appearance. */
export function mentionsIn(body: string): string[] {
  return [...new Set([...body.matchAll(MENTION_PATTERN)].map((m) => m[1] as string))];
}

const BODY = {
  description: `The comment's text, trimmed (1-${MAX_COMMENT_BODY} characters; line breaks kept). \`<@usr_…>\` mentions a member of the organization.`,
  examples: [`Ready for review, <@${OTHER_USER_ID}>.`],
};

/** Not task content: writing one changes no version and no ETag of its task. */
export const Comment = z.object({
  id: z.string().meta({ description: "The comment's id.", examples: [COMMENT_ID] }),
  task_id: z.string().meta({ description: "The task it is on, T-<n>.", examples: ["T-42"] }),
  author_id: z.string().meta({ description: "The user whose credential wrote it; only they may edit it.", examples: [USER_ID] }),
  body: z.string().meta(BODY),
  mention_ids: z.array(z.string()).meta({
    description: `The users its body mentions (\`<@usr_…>\`), once each, in order of first appearance (0-${MAX_COMMENT_MENTIONS}).`,
    examples: [[OTHER_USER_ID]],
  }),
  created_at: CreatedAt,
  updated_at: UpdatedAt,
  edited_at: Timestamp.nullable().meta({ description: "When its body was last edited (UTC, ISO 8601); null before any edit.", examples: [EXAMPLE_INSTANT] }),
});
export type Comment = z.infer<typeof Comment>;

export const COMMENT_FIELDS = Object.keys(Comment.shape) as readonly (keyof Comment)[];

const CommentBodyText = Text.trim()
  .min(1, { message: "must not be empty (after trimming)" })
  .max(MAX_COMMENT_BODY, { message: `must be at most ${MAX_COMMENT_BODY} characters (after trimming)` })
  .refine((b) => mentionsIn(b).length <= MAX_COMMENT_MENTIONS, { message: `must mention at most ${MAX_COMMENT_MENTIONS} users` });

export const CreateCommentBody = z.strictObject({ body: CommentBodyText.meta(BODY) });
export type CreateCommentBody = z.infer<typeof CreateCommentBody>;

export const UpdateCommentBody = z.strictObject({
  body: CommentBodyText.meta({ ...BODY, description: `${BODY.description} Replaces the text; only the author may edit.` }),
});
export type UpdateCommentBody = z.infer<typeof UpdateCommentBody>;

export const CommentParams = z.object({
  task_id: TaskIdParam,
  comment_id: OpaqueId.meta({ description: "The comment's id.", examples: [COMMENT_ID] }),
});
export type CommentParams = z.infer<typeof CommentParams>;

export const ListCommentsInput = PageQuery.extend({ task_id: OpaqueId });

export const DeletedComment = z.object({ id: z.string().meta({ description: "The deleted comment's id.", examples: [COMMENT_ID] }) });

/** What a comment.deleted event carries: the comment is gone, so only where it was. */
export const DeletedCommentData = z.object({
  id: z.string().meta({ description: "The deleted comment's id.", examples: [COMMENT_ID] }),
  task_id: z.string().meta({ description: "The task it was on.", examples: ["T-42"] }),
});
export type DeletedCommentData = z.infer<typeof DeletedCommentData>;

export const COMMENT_EXAMPLE: Comment = {
  id: COMMENT_ID,
  task_id: "T-42",
  author_id: USER_ID,
  body: `Ready for review, <@${OTHER_USER_ID}>.`,
  mention_ids: [OTHER_USER_ID],
  created_at: EXAMPLE_INSTANT,
  updated_at: EXAMPLE_INSTANT,
  edited_at: null,
};

export const commentOps = {
  createComment: { input: CreateCommentBody.extend({ task_id: OpaqueId }), output: Comment },
  listComments: { input: ListCommentsInput, output: page(Comment) },
  getComment: { input: CommentParams, output: Comment },
  updateComment: { input: CommentParams.extend({ patch: UpdateCommentBody }), output: Comment },
  deleteComment: { input: CommentParams, output: DeletedComment },
} as const;
