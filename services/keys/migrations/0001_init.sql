-- Up Migration
create table organizations (
  id            text primary key,
  name          text not null,
  plan          text not null check (plan in ('free', 'pro', 'team')),
  -- Per-organization overrides of the plan defaults (admin set-limits); null = plan default.
  burst         integer check (burst > 0),
  quota         integer check (quota > 0),
  max_file_size bigint check (max_file_size > 0),
  storage       bigint check (storage > 0),
  created_at    timestamptz not null default now()
);

create table users (
  id         text primary key,
  email      text not null,
  created_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table memberships (
  organization_id text not null references organizations (id) on delete cascade,
  user_id         text not null references users (id) on delete cascade,
  role            text not null check (role in ('owner', 'admin', 'member')),
  created_at      timestamptz not null default now(),
  primary key (organization_id, user_id)
);
create index memberships_org_created_idx on memberships (organization_id, created_at, user_id);

create table api_keys (
  id              text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  -- The creating user: the key acts as this user and needs its current membership.
  user_id         text not null references users (id) on delete cascade,
  name            text,
  key_hash        text not null,
  key_prefix      text not null,
  scopes          text[] not null,
  legacy          boolean not null default false,
  test_mode       boolean not null default false,
  expires_at      timestamptz,
  last_used_at    timestamptz,
  -- Only legacy keys are soft-revoked; current keys are deleted (spec 4.1).
  revoked_at      timestamptz,
  created_at      timestamptz not null default now(),
  constraint api_keys_key_hash_key unique (key_hash)
);
create index api_keys_org_created_idx on api_keys (organization_id, created_at desc, id desc) where revoked_at is null;

-- The development OAuth issuer's signing key (admin issue-token). One row per key id.
create table signing_keys (
  kid         text primary key,
  private_jwk jsonb not null,
  public_jwk  jsonb not null,
  created_at  timestamptz not null default now()
);
