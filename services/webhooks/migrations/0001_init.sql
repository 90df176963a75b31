-- Subscriptions (main API and automation hooks), deliveries and their attempts.

CREATE TABLE webhooks.subscriptions (
    id                uuid        PRIMARY KEY,
    workspace_id      uuid        NOT NULL,
    kind              text        NOT NULL CHECK (kind IN ('main', 'automation')),
    name              text,
    target_url        text        NOT NULL,
    events            text[]      NOT NULL,
    -- HMAC signing needs the secret itself, so it is kept (not a hash); see docs/webhooks.md.
    secret            text        NOT NULL,
    is_active         boolean     NOT NULL DEFAULT true,
    failure_count     integer     NOT NULL DEFAULT 0,
    last_delivered_at timestamptz,
    last_failed_at    timestamptz,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_ws ON webhooks.subscriptions (workspace_id, kind, created_at, id);

CREATE TABLE webhooks.deliveries (
    id              uuid        PRIMARY KEY,
    workspace_id    uuid        NOT NULL,
    subscription_id uuid        NOT NULL REFERENCES webhooks.subscriptions (id) ON DELETE CASCADE,
    event_id        uuid        NOT NULL,
    event_type      text        NOT NULL,
    target_host     text        NOT NULL,   -- host:port, for the per-host concurrency share
    body            bytea       NOT NULL,   -- the exact bytes signed and sent on every attempt
    status          text        NOT NULL DEFAULT 'pending'
                                CHECK (status IN ('pending', 'delivered', 'failed')),
    attempt_count   integer     NOT NULL DEFAULT 0,
    status_code     integer,
    error           text,
    duration_ms     integer,
    delivered_at    timestamptz,
    next_attempt_at timestamptz,
    locked_until    timestamptz,            -- lease of the worker running the attempt
    lease           uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- one delivery per (event, subscription): a redelivered event adds nothing
    UNIQUE (subscription_id, event_id)
);
-- The dispatcher's queue: only pending rows are indexed, so the index stays small.
CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_recent ON webhooks.deliveries (subscription_id, created_at DESC, id DESC);

CREATE TABLE webhooks.attempts (
    id           bigserial   PRIMARY KEY,
    delivery_id  uuid        NOT NULL REFERENCES webhooks.deliveries (id) ON DELETE CASCADE,
    workspace_id uuid        NOT NULL,
    attempt      integer     NOT NULL,
    status_code  integer,
    error        text,
    duration_ms  integer     NOT NULL,
    signed_at    bigint      NOT NULL,       -- the X-Service-Timestamp sent
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attempts_delivery ON webhooks.attempts (delivery_id, attempt);
