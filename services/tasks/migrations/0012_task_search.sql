-- Up Migration
-- Finding tasks. Full text uses a language-neutral configuration: the simple parser and
-- dictionary (no stemming and no stop words, so a word of any language is kept as written),
-- after unaccent, so "resume" finds "Résumé". unaccent and pg_trgm (the index of `title
-- contains`) are trusted extensions, which the database owner may create; they live in the
-- schema `extensions`, shared by the database, so that no service's schema owns them (dropping
-- one would take the others' search with it). One a DBA installed elsewhere is used where it is.
-- The indexes themselves are built without blocking writers by the service after its migrations
-- (CREATE INDEX CONCURRENTLY cannot run in the migrations' transaction).
select pg_advisory_xact_lock(hashtextextended('tasksvc:extensions', 0));
create schema if not exists extensions;
create extension if not exists unaccent with schema extensions;
create extension if not exists pg_trgm with schema extensions;

do $$
declare
  s text;
begin
  select n.nspname into s from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'unaccent';
  -- In the schema being migrated (the first of the search path), as every object of this service.
  create text search configuration task_search (copy = pg_catalog.simple);
  execute format('alter text search configuration task_search alter mapping for asciiword, asciihword, hword_asciipart, word, hword, hword_part with %I.unaccent, pg_catalog.simple', s);
end
$$;
