-- The retention sweep (libs/common/retention.py) finds old rows by these; they span
-- workspaces on purpose, as the sweep does.
CREATE INDEX deliveries_created ON webhooks.deliveries (created_at);
CREATE INDEX attempts_created ON webhooks.attempts (created_at);
CREATE INDEX processed_events_at ON webhooks.processed_events (processed_at);
