-- Message headers an event carries beside its body (what a consumer needs that receivers of
-- the body do not get, e.g. the author of a new idea); {schema} is the owning service's schema.
ALTER TABLE {schema}.outbox ADD COLUMN IF NOT EXISTS headers jsonb;
