-- Up Migration
-- Rollover of recurring tasks (issue 16; decision 0021). The tasks service's scheduler asks for an
-- unfinished occurrence to be placed on its owner's board for a day; this row makes that happen
-- once per task and day, whichever replica asks and however often. An entry the user removes
-- stays removed. Rows are only needed while their day can still be asked for: swept after a week.
create table rollovers (
  organization_id text not null,
  task_number     bigint not null,
  date            date not null,
  created_at      timestamptz not null default now(),
  primary key (organization_id, task_number, date)
);
create index rollovers_date_idx on rollovers (date);
