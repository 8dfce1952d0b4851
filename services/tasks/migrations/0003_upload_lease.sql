-- Up Migration
-- A PUT's claim on its ticket is leased (decision 0016): a gateway that dies mid-upload cannot
-- release it, so a claim past its lease may be taken again by the client's retry. The lease
-- allows 60 s plus one second per MiB of the declared size. A completed PUT moves the ticket to
-- `received`, which no later PUT can claim.
alter table uploads add column receiving_until timestamptz;
