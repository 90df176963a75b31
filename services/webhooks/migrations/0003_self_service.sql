-- Webhook self-service (docs/webhooks.md): secret rotation, redelivery, per-attempt times.

-- During a rotation the previous secret also signs until it expires (at most two sign).
ALTER TABLE webhooks.subscriptions
    ADD COLUMN previous_secret            text,
    ADD COLUMN previous_secret_expires_at timestamptz;

-- The last time a subscription was switched off and on: an event that occurred in between is
-- never delivered to it, even when it is consumed after the subscription is back on.
ALTER TABLE webhooks.subscriptions
    ADD COLUMN deactivated_at timestamptz,
    ADD COLUMN reactivated_at timestamptz;

-- A redelivered delivery gets the whole retry schedule again while attempt_count goes on:
-- its place in the schedule is attempt_count - schedule_base.
ALTER TABLE webhooks.deliveries ADD COLUMN schedule_base integer NOT NULL DEFAULT 0;

-- When each attempt started (attempts written before this have only created_at).
ALTER TABLE webhooks.attempts ADD COLUMN attempted_at timestamptz;
