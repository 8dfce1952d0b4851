-- Up Migration
-- Invitations to join an organization. Only a SHA-256 hash of the token is kept, as for API keys;
-- the token itself is shown once, when the invitation is made. `status` is not stored: it follows
-- from accepted_at, revoked_at and expires_at, so an invitation expires without a write.
create table invitations (
  id               text primary key,
  organization_id  text not null references organizations (id) on delete cascade,
  email            text not null,
  role             text not null check (role in ('owner', 'admin', 'member')),
  token_hash       text not null,
  invited_by       text references users (id) on delete set null,
  expires_at       timestamptz not null,
  accepted_at      timestamptz,
  accepted_user_id text references users (id) on delete set null,
  revoked_at       timestamptz,
  created_at       timestamptz not null default now(),
  constraint invitations_token_hash_key unique (token_hash),
  constraint invitations_accepted_or_revoked check (num_nonnulls(accepted_at, revoked_at) <= 1)
);
create index invitations_org_created_idx on invitations (organization_id, created_at desc, id desc);
-- The pending ones, counted at every create against the organization's limit.
create index invitations_pending_idx on invitations (organization_id, expires_at) where accepted_at is null and revoked_at is null;
