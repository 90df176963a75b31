-- The transactional outbox and the consumer's record of handled events, one pair per
-- service schema ({schema} is the owning service's schema name).
CREATE TABLE IF NOT EXISTS {schema}.outbox (
    id           bigserial PRIMARY KEY,
    event_id     uuid        NOT NULL UNIQUE,
    event_type   text        NOT NULL,
    workspace_id uuid        NOT NULL,
    body         bytea       NOT NULL,          -- the exact message body, serialized once
    request_id   text,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS {schema}.processed_events (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);
