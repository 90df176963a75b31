-- Rate windows live for an hour at most and are rewritten on every request: keep them out of
-- the WAL. One hot row per workspace is locked per request; without a WAL flush per commit the
-- lock is held for microseconds instead of a disk sync. A crash empties the table, which only
-- forgives the current window.
ALTER TABLE gateway.rate_counters SET UNLOGGED;
