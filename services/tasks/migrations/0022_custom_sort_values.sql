-- Up Migration
-- The values of number and date custom fields, one row per task and field, so that a page sorted by
-- such a field walks an index in the field's order instead of reading and sorting every task of the
-- organization that has the field (about 450 ms at a million tasks).
create table task_sort_values (
  organization_id text not null,
  task_number     bigint not null,
  field_key       text not null,
  num             numeric,
  day             text,
  primary key (organization_id, task_number, field_key),
  foreign key (organization_id, task_number) references tasks (organization_id, number) on delete cascade,
  check ((num is null) <> (day is null))
);
create index task_sort_values_num_idx on task_sort_values (organization_id, field_key, num, task_number) where num is not null;
create index task_sort_values_day_idx on task_sort_values (organization_id, field_key, day, task_number) where day is not null;

-- A task's rows: the type comes from the definition, the shape from the value (a stale value of
-- another type is skipped, as the sort expression this replaces skipped it). One statement of
-- them, for the trigger, the backfill below and bulk loads.
create function task_sort_rows(org text, task bigint, cf jsonb)
returns table (organization_id text, task_number bigint, field_key text, num numeric, day text)
language sql stable parallel safe set search_path from current as $$
  select org, task, f.key,
    case when f.type = 'number' then (cf -> f.key)::numeric end,
    case when f.type = 'date' then cf ->> f.key end
  from custom_fields f
  where cf <> '{}'::jsonb and f.organization_id = org and f.type in ('number', 'date')
    and jsonb_typeof(cf -> f.key) = case f.type when 'number' then 'number' else 'string' end
$$;

-- Kept by a trigger, so every writer of custom_fields (creates, edits, batches, removals, and
-- whatever writes tasks later) keeps it in the same transaction without knowing of it. The schema
-- is bound at creation, so a session with another search_path writes tasks just as well.
create function task_sort_values_sync() returns trigger language plpgsql set search_path from current as $$
begin
  if tg_op = 'UPDATE' then
    delete from task_sort_values where organization_id = new.organization_id and task_number = new.number;
  end if;
  insert into task_sort_values select * from task_sort_rows(new.organization_id, new.number, new.custom_fields);
  return null;
end
$$;
create trigger task_sort_values_insert after insert on tasks
  for each row when (new.custom_fields <> '{}'::jsonb) execute function task_sort_values_sync();
create trigger task_sort_values_update after update of custom_fields on tasks
  for each row when (old.custom_fields is distinct from new.custom_fields) execute function task_sort_values_sync();

insert into task_sort_values
select r.* from tasks t cross join lateral task_sort_rows(t.organization_id, t.number, t.custom_fields) r
where t.custom_fields <> '{}'::jsonb;
