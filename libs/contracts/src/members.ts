import { z } from "zod";
import { Role } from "./auth.js";
import { CreatedAt, EXAMPLE_INSTANT, Label, NO_BIDI_CONTROLS_MESSAGE, noBidiControls, OpaqueId, Timestamp } from "./common.js";

export const Email = z.email().max(320);

/** Shown in lists, logs and the admin CLI, so no bidirectional control that would make one name display as another. */
export const StoredName = Label.refine((s) => s.trim() !== "", { message: "must not be blank" }).refine(noBidiControls, { message: NO_BIDI_CONTROLS_MESSAGE });

const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";
const INVITATION_ID = "inv_4kR8sT2mQ6vX9pL3nB7dW5";
const INVITATION_TOKEN = "invite_5Qe8TzL2wRk9mXb4NcV7pJd3sHf6Ga1Yu0Ko8Li2Mn";

/** How long an invitation can be accepted. */
export const INVITATION_TTL_DAYS = 7;
/** Pending at once per organization: each is a row and a token someone may still use. */
export const MAX_PENDING_INVITATIONS = 100;

export const UserIdParams = z.object({
  user_id: OpaqueId.meta({ description: "The member's user id.", examples: [USER_ID] }),
});

export const UpdateMemberBody = z.strictObject({
  role: Role.meta({
    description: "The member's new role. Only an owner makes someone an owner or changes an owner's role; the last owner keeps theirs.",
    examples: ["admin"],
  }),
});
export type UpdateMemberBody = z.infer<typeof UpdateMemberBody>;

export const RemovedMember = z.object({
  user_id: z.string().meta({ description: "The user who is no longer a member.", examples: [USER_ID] }),
});

export const INVITATION_STATUSES = ["pending", "accepted", "revoked", "expired"] as const;
export const InvitationStatus = z.enum(INVITATION_STATUSES);
export type InvitationStatus = z.infer<typeof InvitationStatus>;

export const Invitation = z.object({
  id: z.string().meta({ description: "The invitation's id: use it to revoke the invitation.", examples: [INVITATION_ID] }),
  email: z.string().meta({ description: "Who is invited: the email address the new member will have.", examples: ["ada@example.com"] }),
  role: Role.meta({ description: "The role the invited person gets on accepting.", examples: ["member"] }),
  status: InvitationStatus.meta({
    description: "`pending` until it is accepted, revoked or past `expires_at` (then `expired`).",
    examples: ["pending"],
  }),
  expires_at: Timestamp.meta({ description: `When it can no longer be accepted: ${INVITATION_TTL_DAYS} days after it was made.`, examples: [EXAMPLE_INSTANT] }),
  created_at: CreatedAt,
});
export type Invitation = z.infer<typeof Invitation>;

export const CreatedInvitation = Invitation.extend({
  token: z.string().meta({
    description:
      "The invitation's secret: shown only in this answer. Hand it to the invited person, who accepts with `POST /v1/invitations/accept`; whoever holds it can join.",
    examples: [INVITATION_TOKEN],
  }),
});
export type CreatedInvitation = z.infer<typeof CreatedInvitation>;

export const CreateInvitationBody = z.strictObject({
  email: Email.meta({ description: "The invited person's email address; someone who is already a member cannot be invited.", examples: ["ada@example.com"] }),
  role: Role.meta({ description: "The role they get: `admin` or `member` (`owner` only when an owner invites).", examples: ["member"] }),
});
export type CreateInvitationBody = z.infer<typeof CreateInvitationBody>;

export const InvitationIdParams = z.object({
  invitation_id: OpaqueId.meta({ description: "The invitation's id.", examples: [INVITATION_ID] }),
});

export const AcceptInvitationBody = z.strictObject({
  token: Label.min(1)
    .max(200)
    .meta({ description: "The invitation's token, as the invitation's creator received it.", examples: [INVITATION_TOKEN] }),
  key_name: StoredName.min(1)
    .max(200)
    .meta({ description: "A name for the API key made for the new member (what it is for).", examples: ["Ada's laptop"] }),
});
export type AcceptInvitationBody = z.infer<typeof AcceptInvitationBody>;

export const AcceptedInvitation = z.object({
  organization_id: z.string().meta({ description: "The organization joined.", examples: ["org_3kTMd92jf7Qw1xYp8LmN2a"] }),
  user_id: z.string().meta({ description: "The new member's user id (an existing user keeps theirs).", examples: [USER_ID] }),
  api_key: z.string().meta({
    description: "An API key acting as the new member, with the default scopes: shown only in this answer, store it now.",
    examples: ["svc_live_4f9a…"],
  }),
});
export type AcceptedInvitation = z.infer<typeof AcceptedInvitation>;
