-- Up Migration
-- Who wrote each version (decision 0044): the credential's kind, its id and the member it acts as,
-- shown as the version's `actor`; and, kept for an undo to find a request's or a batch's versions,
-- the request id and a batch item's Idempotency-Key (the batch's), never shown. Versions written
-- before this have no record (null: served as not recorded). Nullable columns without a default are
-- added without rewriting a row; the check is not validated against the old rows (nothing to check
-- there, and validating would read every version under the table's lock).
alter table task_versions add column actor_type text, add column actor_id text, add column actor_user_id text,
  add column request_id text, add column batch_key text;
alter table task_versions add constraint task_versions_actor_check
  check ((actor_type is null and actor_id is null and actor_user_id is null)
    or (actor_type in ('user', 'api_key', 'oauth_client', 'system', 'rewind') and actor_id is not null)) not valid;
-- The indexes that find versions by credential, request or batch within a time window are built
-- concurrently after the migrations (repo/indexes.ts): the table is the largest of the schema.

-- An import's versions are the starter's: the import records who started it and the request.
-- Imports queued before this have neither, and their versions say not recorded.
alter table imports add column actor jsonb, add column request_id text;
