-- Up Migration
-- The development issuer's private key is sealed under KEYS_SECRET_KEY (AES-256-GCM, the `v1`
-- format of every sealed secret): a copy of the database must not be enough to mint access
-- tokens. The key is in the environment, not here, so this migration cannot seal the rows it finds;
-- the service seals a plain row in place at start, and until then (or while an older replica still
-- writes one during a rollout) a row holds exactly one of the two forms.
alter table signing_keys add column private_key_sealed text;
alter table signing_keys alter column private_jwk drop not null;
alter table signing_keys add constraint signing_keys_one_private_key check (num_nonnulls(private_jwk, private_key_sealed) = 1);
