-- Workspaces, their API keys (hashes only), shared rate-limit windows and idempotency records.
CREATE TABLE gateway.workspaces (
    id                        uuid PRIMARY KEY,
    name                      text        NOT NULL,
    plan                      text        NOT NULL CHECK (plan IN ('starter','pro','growth','scale','enterprise')),
    rate_limit_per_minute     integer     CHECK (rate_limit_per_minute > 0),   -- null: the plan's
    inbox_mode                text        NOT NULL DEFAULT 'direct' CHECK (inbox_mode IN ('direct','review')),
    short_code                text,
    slug                      text,
    default_destination       text,
    public_submission_enabled boolean     NOT NULL DEFAULT false,
    created_at                timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gateway.api_keys (
    id            uuid PRIMARY KEY,
    workspace_id  uuid        NOT NULL REFERENCES gateway.workspaces (id),
    name          text        NOT NULL DEFAULT 'API key',
    kind          text        NOT NULL CHECK (kind IN ('production','staging')),
    key_hash      bytea       NOT NULL UNIQUE,      -- sha256 of the full key; the key is never stored
    key_hint      text        NOT NULL,             -- prefix and last 4 characters, for people
    scopes        text[]      NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
CREATE INDEX api_keys_workspace ON gateway.api_keys (workspace_id);

-- Fixed windows: one row per bucket (workspace, export window or client address) and window.
CREATE TABLE gateway.rate_counters (
    bucket        text        NOT NULL,
    window_start  timestamptz NOT NULL,
    count         integer     NOT NULL,
    PRIMARY KEY (bucket, window_start)
);

CREATE TABLE gateway.idempotency_keys (
    workspace_id     uuid        NOT NULL,
    key              text        NOT NULL,
    request_hash     bytea       NOT NULL,
    state            text        NOT NULL CHECK (state IN ('in_flight','done')),
    response_status  integer,
    response_headers jsonb,
    response_body    bytea,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, key)
);
CREATE INDEX idempotency_keys_created ON gateway.idempotency_keys (created_at);
