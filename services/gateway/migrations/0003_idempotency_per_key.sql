-- Idempotency records belong to the API key that made them, not only to its workspace: two keys
-- of one workspace sending the same Idempotency-Key and body are two requests (docs/gateway.md).
-- Records already stored were made by a key no row names: they get the nil key id and answer
-- any key of their workspace, as they did, until they expire (24 hours after they were made).
DELETE FROM gateway.idempotency_keys WHERE created_at < now() - interval '24 hours';
ALTER TABLE gateway.idempotency_keys
    ADD COLUMN key_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
ALTER TABLE gateway.idempotency_keys ALTER COLUMN key_id DROP DEFAULT;
ALTER TABLE gateway.idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE gateway.idempotency_keys ADD PRIMARY KEY (workspace_id, key_id, key);
