-- The retention sweep (libs/common/retention.py) finds old handled-event ids by this.
CREATE INDEX processed_events_at ON ideas.processed_events (processed_at);
