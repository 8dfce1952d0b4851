-- Up Migration
-- Labels: defined per organization, carried by tasks as content (a version, history, events).
-- Array columns with a constant default are added without rewriting a row.
alter table tasks add column label_ids text[] not null default '{}';
alter table task_versions add column label_ids text[] not null default '{}';

create table labels (
  id              text primary key,
  organization_id text not null,
  name            text not null,
  color           text not null,
  description     text,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now()
);
create unique index labels_name_key on labels (organization_id, lower(name));
-- The list's order: by name, as people look for one.
create index labels_list_idx on labels (organization_id, lower(name), id);

-- Something deleted that tasks still carry, while the work that removes it from them runs: reads
-- leave it out, and the work deletes the row once no task carries it.
create table removals (
  organization_id text not null,
  kind            text not null check (kind in ('label', 'field', 'option')),
  ref             text not null,
  -- The key of the custom field a removed field or option belongs to (reads drop values by key).
  field_key       text,
  created_at      timestamptz not null default now(),
  primary key (organization_id, kind, ref)
);

-- A task's labels as reads show them: without those being removed. A function, so every statement
-- that renders a task (whatever it calls its row) says it the same way; with no removal under way it
-- costs one probe of an empty index.
create function shown_labels(org text, ids text[]) returns text[] language sql stable parallel safe as $$
  select case
    when ids = '{}' or not exists (select 1 from removals where organization_id = org and kind = 'label') then ids
    else array(
      select l from unnest(ids) with ordinality u(l, o)
      where not exists (select 1 from removals where organization_id = org and kind = 'label' and ref = l)
      order by o)
  end
$$;

-- Custom fields: defined per organization; tasks hold their values by key. `options` (select and
-- multi_select only) is a list of { id, name, color }, read and written whole with its field.
create table custom_fields (
  id              text primary key,
  organization_id text not null,
  key             text not null,
  name            text not null,
  type            text not null check (type in ('text', 'number', 'date', 'select', 'multi_select', 'user', 'checkbox', 'url')),
  options         jsonb not null default '[]',
  description     text,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  constraint custom_fields_key_key unique (organization_id, key)
);
-- The list's order: oldest first.
create index custom_fields_list_idx on custom_fields (organization_id, created_at, id);
