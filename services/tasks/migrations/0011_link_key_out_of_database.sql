-- Up Migration
-- Upload and download links are signed with keys from the LINK_SIGNING_KEYS setting: the key this
-- table held in plain text let anyone with a copy of the database mint a link to any
-- organization's file. It goes, and the table with it (it held nothing else); links it signed stop
-- opening (they lived minutes at most).
drop table secrets;
