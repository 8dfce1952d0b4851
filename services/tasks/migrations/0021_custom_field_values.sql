-- Up Migration
-- Custom field values on tasks: content, like labels. A jsonb column with a constant default is
-- added without rewriting a row.
alter table tasks add column custom_fields jsonb not null default '{}';
alter table task_versions add column custom_fields jsonb not null default '{}';

-- A task's custom field values as reads show them: without a field being removed, without an
-- option being removed (a multi_select left with none has no value). With no removal under way it
-- costs one probe of an empty index.
create function shown_custom_fields(org text, cf jsonb) returns jsonb language sql stable parallel safe as $$
  select case
    when cf = '{}'::jsonb or not exists (select 1 from removals where organization_id = org and kind in ('field', 'option')) then cf
    else coalesce((
      select jsonb_object_agg(kept.key, kept.value) from (
        select e.key,
          case when jsonb_typeof(e.value) = 'array' then (
            select coalesce(jsonb_agg(x order by o), '[]'::jsonb) from jsonb_array_elements(e.value) with ordinality a(x, o)
            where not exists (select 1 from removals r
              where r.organization_id = org and r.kind = 'option' and r.field_key = e.key and r.ref = x #>> '{}'))
          else e.value end as value
        from jsonb_each(cf) e
        where not exists (select 1 from removals r where r.organization_id = org and r.kind = 'field' and r.field_key = e.key)
          and not (jsonb_typeof(e.value) = 'string' and exists (select 1 from removals r
            where r.organization_id = org and r.kind = 'option' and r.field_key = e.key and r.ref = e.value #>> '{}'))
      ) kept
      where kept.value <> '[]'::jsonb), '{}'::jsonb)
  end
$$;
