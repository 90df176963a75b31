-- Covering indexes of the analytics reports (docs/analytics.md, "Query plans"). Each report
-- reads one of them by an index-only scan: only the columns it aggregates, only live ideas
-- (partial on status <> 'deleted'), so that no report visits the wide heap rows. Deleted ideas
-- are excluded by the predicate, never by a filter row by row.
SET LOCAL maintenance_work_mem = '256MB';

-- Ideas by creation: ideas-over-time, funnel, categories (a range of created_at) and summary
-- (every live idea). The key orders a range; the rest only rides along.
CREATE INDEX ideas_an_created ON ideas.ideas (workspace_id, created_at)
    INCLUDE (status, source, category, product_id, decided_at, shipped_at, rice_score,
             total_customer_arr, vote_count, signal_count, rice_reach, rice_impact,
             rice_confidence, rice_effort)
    WHERE status <> 'deleted';

-- Decisions: outcomes, owners and buckets of the ideas decided in a range.
CREATE INDEX ideas_an_decided ON ideas.ideas (workspace_id, decided_at)
    INCLUDE (created_at, closure_category, decision_owner_email, decision_owner_name)
    WHERE status <> 'deleted' AND decided_at IS NOT NULL;

-- Decisions: overdue ideas (undecided, deadline past), few by nature.
CREATE INDEX ideas_an_overdue ON ideas.ideas (workspace_id, decision_deadline)
    INCLUDE (decision_owner_email, decision_owner_name)
    WHERE status <> 'deleted' AND decided_at IS NULL AND decision_deadline IS NOT NULL;

-- Roadmap: per stage counts and sums; unstaged = live total - staged.
CREATE INDEX ideas_an_stage ON ideas.ideas (workspace_id, roadmap_stage_id)
    INCLUDE (total_customer_arr, rice_score)
    WHERE status <> 'deleted' AND roadmap_stage_id IS NOT NULL;

-- Roadmap velocity: live ideas shipped in the last 30 / 90 days.
CREATE INDEX ideas_an_shipped ON ideas.ideas (workspace_id, shipped_at)
    WHERE status <> 'deleted' AND shipped_at IS NOT NULL;

-- Revenue impact: ARR per status, from the ideas that have any.
CREATE INDEX ideas_an_arr ON ideas.ideas (workspace_id, status) INCLUDE (total_customer_arr)
    WHERE status <> 'deleted' AND total_customer_arr <> 0;

-- Signals report: a range of detected_at with what it groups by; deleted ideas are subtracted
-- by an anti-join on the (few) deleted ideas, read from ideas_status.
CREATE INDEX signals_an_detected ON ideas.signals (workspace_id, detected_at)
    INCLUDE (platform, sentiment, sentiment_score, idea_id);

-- Signals report, unique ideas per platform: pairs in (idea, platform) order, so that the
-- anti-join on deleted ideas merges and the distinct pairs stream out without a hash.
CREATE INDEX signals_an_idea ON ideas.signals (workspace_id, idea_id, platform)
    INCLUDE (detected_at);
