-- Up Migration
-- A task's version is never null again: a task created from now on starts at 1, by the create
-- statement or, for a replica of the previous release still running, by this default (its create
-- names no version; a new task is at version 1, and a first version row at 1 too).
--
-- The rows from before it are not filled here: every migration runs in one transaction, and one
-- UPDATE of a million tasks (every index written again, the text and trigram ones above all) took
-- 84 s, holding every such task against writes until it committed. They are filled after the
-- migrations instead, a few thousand rows per transaction, and the columns are made not null then
-- (repo/backfills.ts): a write waits for one batch at most, and the service serves once it is done.
alter table tasks alter column version set default 1;
alter table task_versions alter column version set default 1;
