-- Up Migration
-- OAuth clients (client credentials grant). Only a SHA-256 hash of the secret is kept, as for API
-- keys; the secret is shown once. A client's tokens act as the member who created it.
create table oauth_clients (
  id              text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  name            text not null,
  client_id       text not null,
  secret_hash     text not null,
  scopes          text[] not null,
  created_by      text not null references users (id) on delete cascade,
  created_at      timestamptz not null default now(),
  constraint oauth_clients_client_id_key unique (client_id)
);
create index oauth_clients_org_created_idx on oauth_clients (organization_id, created_at desc, id desc);
create index oauth_clients_creator_idx on oauth_clients (organization_id, created_by);

-- Revoked access tokens of our own issuer, by their jti, until the token would have expired anyway.
create table oauth_revoked_tokens (
  jti        text primary key,
  client_id  text not null references oauth_clients (id) on delete cascade,
  expires_at timestamptz not null
);
create index oauth_revoked_tokens_expiry_idx on oauth_revoked_tokens (expires_at);
create index oauth_revoked_tokens_client_idx on oauth_revoked_tokens (client_id);
