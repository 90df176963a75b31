-- Rollups of the summary and signals reports (docs/analytics.md, "Rollups"), kept by triggers
-- in the same transaction as every write to ideas.ideas and ideas.signals, as status_counts is:
-- exact, never behind, and read in the snapshot of the rest of a report. Sums of floating-point
-- columns are kept as numeric, so that adding and later subtracting a value restores the sum
-- exactly whatever the order. Rows whose counts fall back to zero may stay; readers skip them.
-- Requires PostgreSQL 15 or later (UNIQUE NULLS NOT DISTINCT).

-- Writes wait while the rollups are filled, so that none falls between the fill and its trigger.
LOCK TABLE ideas.ideas, ideas.signals IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL maintenance_work_mem = '256MB';

-- Summary: live ideas per (UTC month of creation, source, category) with the RICE sums.
CREATE TABLE ideas.idea_months (
    workspace_id   uuid    NOT NULL,
    month          date    NOT NULL,
    source         text    NOT NULL,
    category       text,
    n              bigint  NOT NULL,
    reach_sum      numeric NOT NULL,
    reach_n        bigint  NOT NULL,
    impact_sum     numeric NOT NULL,
    impact_n       bigint  NOT NULL,
    confidence_sum numeric NOT NULL,
    confidence_n   bigint  NOT NULL,
    effort_sum     numeric NOT NULL,
    effort_n       bigint  NOT NULL,
    score_sum      numeric NOT NULL,
    score_n        bigint  NOT NULL,
    UNIQUE NULLS NOT DISTINCT (workspace_id, month, source, category)
);

-- Signals of live ideas per (UTC day of detection, platform, sentiment).
CREATE TABLE ideas.signal_days (
    workspace_id uuid    NOT NULL,
    day          date    NOT NULL,
    platform     text    NOT NULL,
    sentiment    text,
    n            bigint  NOT NULL,
    score_sum    numeric NOT NULL,
    score_n      bigint  NOT NULL,
    UNIQUE NULLS NOT DISTINCT (workspace_id, day, platform, sentiment)
);

-- The days on which each (idea, platform) has signals, every idea deleted or not, each with
-- the previous such day (prev_day; '-infinity' for the first, NULL only inside a trigger).
CREATE TABLE ideas.signal_idea_days (
    workspace_id uuid   NOT NULL,
    idea_id      uuid   NOT NULL,
    platform     text   NOT NULL,
    day          date   NOT NULL,
    n            bigint NOT NULL,
    prev_day     date,
    PRIMARY KEY (workspace_id, idea_id, platform, day)
);

-- Unique ideas per platform over any range of whole days [a, b): an (idea, platform) with
-- signals in the range has exactly one day there whose previous day lies before a. So the
-- live ideas' signal_idea_days rows are counted per (day, platform, prev_day), and the answer
-- is the sum over day in [a, b) and prev_day < a: a range read of few rows, however many
-- signals the range holds.
CREATE TABLE ideas.signal_firsts (
    workspace_id uuid   NOT NULL,
    day          date   NOT NULL,
    platform     text   NOT NULL,
    prev_day     date   NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (workspace_id, day, platform, prev_day)
);

-- Fill them from the rows, for one workspace or (NULL) all: used below, and by bulk loads that
-- write with the triggers off (`ideasctl seed`).
CREATE FUNCTION ideas.rebuild_rollups(ws uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ideas.idea_months WHERE ws IS NULL OR workspace_id = ws;
    DELETE FROM ideas.signal_days WHERE ws IS NULL OR workspace_id = ws;
    DELETE FROM ideas.signal_idea_days WHERE ws IS NULL OR workspace_id = ws;
    DELETE FROM ideas.signal_firsts WHERE ws IS NULL OR workspace_id = ws;

    INSERT INTO ideas.idea_months
    SELECT workspace_id, (date_trunc('month', created_at AT TIME ZONE 'UTC'))::date, source,
           category, count(*), coalesce(sum(rice_reach::numeric), 0), count(rice_reach),
           coalesce(sum(rice_impact::numeric), 0), count(rice_impact),
           coalesce(sum(rice_confidence::numeric), 0), count(rice_confidence),
           coalesce(sum(rice_effort::numeric), 0), count(rice_effort),
           coalesce(sum(rice_score::numeric), 0), count(rice_score)
      FROM ideas.ideas WHERE (ws IS NULL OR workspace_id = ws) AND status <> 'deleted'
     GROUP BY 1, 2, 3, 4;

    INSERT INTO ideas.signal_days
    SELECT s.workspace_id, (s.detected_at AT TIME ZONE 'UTC')::date, s.platform, s.sentiment,
           count(*), coalesce(sum(s.sentiment_score::numeric), 0), count(s.sentiment_score)
      FROM ideas.signals s
     WHERE (ws IS NULL OR s.workspace_id = ws) AND NOT EXISTS (
           SELECT 1 FROM ideas.ideas d WHERE d.id = s.idea_id AND d.status = 'deleted')
     GROUP BY 1, 2, 3, 4;

    INSERT INTO ideas.signal_idea_days
    SELECT workspace_id, idea_id, platform, day, n,
           coalesce(lag(day) OVER (PARTITION BY workspace_id, idea_id, platform ORDER BY day),
                    '-infinity')
      FROM (SELECT workspace_id, idea_id, platform, (detected_at AT TIME ZONE 'UTC')::date AS day,
                   count(*) AS n
              FROM ideas.signals WHERE ws IS NULL OR workspace_id = ws
             GROUP BY 1, 2, 3, 4) g;

    INSERT INTO ideas.signal_firsts
    SELECT t.workspace_id, t.day, t.platform, t.prev_day, count(*)
      FROM ideas.signal_idea_days t
     WHERE (ws IS NULL OR t.workspace_id = ws) AND NOT EXISTS (
           SELECT 1 FROM ideas.ideas d WHERE d.id = t.idea_id AND d.status = 'deleted')
     GROUP BY 1, 2, 3, 4;
END $$;

SELECT ideas.rebuild_rollups(NULL);

-- Keeping them. The functions take the changed rows as SQL text naming the transition tables
-- (never user input): one body serves INSERT (+1 per new row), DELETE (-1 per old row) and
-- UPDATE (both), since a trigger with transition tables serves a single event.
CREATE FUNCTION ideas.rollup_changes(op text, cols text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE op
        WHEN 'INSERT' THEN format('SELECT %s, 1 AS d FROM new_rows', cols)
        WHEN 'DELETE' THEN format('SELECT %s, -1 AS d FROM old_rows', cols)
        ELSE format('SELECT %1$s, -1 AS d FROM old_rows UNION ALL SELECT %1$s, 1 FROM new_rows',
                    cols) END
$$;

CREATE FUNCTION ideas.apply_idea_rollups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($q$
        INSERT INTO ideas.idea_months AS m
        SELECT workspace_id, month, source, category, sum(d),
               coalesce(sum(d * rice_reach::numeric), 0), count(rice_reach) FILTER (WHERE d > 0)
                   - count(rice_reach) FILTER (WHERE d < 0),
               coalesce(sum(d * rice_impact::numeric), 0), count(rice_impact) FILTER (WHERE d > 0)
                   - count(rice_impact) FILTER (WHERE d < 0),
               coalesce(sum(d * rice_confidence::numeric), 0),
               count(rice_confidence) FILTER (WHERE d > 0)
                   - count(rice_confidence) FILTER (WHERE d < 0),
               coalesce(sum(d * rice_effort::numeric), 0), count(rice_effort) FILTER (WHERE d > 0)
                   - count(rice_effort) FILTER (WHERE d < 0),
               coalesce(sum(d * rice_score::numeric), 0), count(rice_score) FILTER (WHERE d > 0)
                   - count(rice_score) FILTER (WHERE d < 0)
          FROM (%s) x
         WHERE status <> 'deleted'
         GROUP BY 1, 2, 3, 4
        HAVING (sum(d), sum(d * (rice_reach IS NULL)::int), sum(d * (rice_impact IS NULL)::int),
                sum(d * (rice_confidence IS NULL)::int), sum(d * (rice_effort IS NULL)::int),
                sum(d * (rice_score IS NULL)::int), coalesce(sum(d * rice_reach::numeric), 0),
                coalesce(sum(d * rice_impact::numeric), 0),
                coalesce(sum(d * rice_confidence::numeric), 0),
                coalesce(sum(d * rice_effort::numeric), 0),
                coalesce(sum(d * rice_score::numeric), 0))
               <> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, month, source, category) DO UPDATE SET
            n = m.n + EXCLUDED.n,
            reach_sum = m.reach_sum + EXCLUDED.reach_sum, reach_n = m.reach_n + EXCLUDED.reach_n,
            impact_sum = m.impact_sum + EXCLUDED.impact_sum,
            impact_n = m.impact_n + EXCLUDED.impact_n,
            confidence_sum = m.confidence_sum + EXCLUDED.confidence_sum,
            confidence_n = m.confidence_n + EXCLUDED.confidence_n,
            effort_sum = m.effort_sum + EXCLUDED.effort_sum,
            effort_n = m.effort_n + EXCLUDED.effort_n,
            score_sum = m.score_sum + EXCLUDED.score_sum, score_n = m.score_n + EXCLUDED.score_n
        $q$, ideas.rollup_changes(TG_OP,
            'workspace_id, (date_trunc(''month'', created_at AT TIME ZONE ''UTC''))::date AS month,'
            ' source, category, status, rice_reach, rice_impact, rice_confidence, rice_effort,'
            ' rice_score'));

    IF TG_OP = 'UPDATE' THEN
        -- Ideas deleted (-1) or restored (+1) take their signals out of the signal rollups or
        -- put them back.
        INSERT INTO ideas.signal_days AS t
        SELECT s.workspace_id, (s.detected_at AT TIME ZONE 'UTC')::date, s.platform, s.sentiment,
               sum(f.d), coalesce(sum(f.d * s.sentiment_score::numeric), 0),
               coalesce(sum(f.d) FILTER (WHERE s.sentiment_score IS NOT NULL), 0)
          FROM (SELECT n.workspace_id, n.id, CASE WHEN n.status = 'deleted' THEN -1 ELSE 1 END AS d
                  FROM old_rows o JOIN new_rows n ON n.id = o.id
                 WHERE (o.status = 'deleted') <> (n.status = 'deleted')) f
          JOIN ideas.signals s ON s.workspace_id = f.workspace_id AND s.idea_id = f.id
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, sentiment) DO UPDATE SET
            n = t.n + EXCLUDED.n, score_sum = t.score_sum + EXCLUDED.score_sum,
            score_n = t.score_n + EXCLUDED.score_n;
        INSERT INTO ideas.signal_firsts AS t
        SELECT i.workspace_id, i.day, i.platform, i.prev_day, sum(f.d)
          FROM (SELECT n.workspace_id, n.id, CASE WHEN n.status = 'deleted' THEN -1 ELSE 1 END AS d
                  FROM old_rows o JOIN new_rows n ON n.id = o.id
                 WHERE (o.status = 'deleted') <> (n.status = 'deleted')) f
          JOIN ideas.signal_idea_days i ON i.workspace_id = f.workspace_id AND i.idea_id = f.id
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, prev_day) DO UPDATE SET n = t.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;

-- Signals: `changes` are the changed rows with d = +1 or -1 and `live` whether their idea is
-- not deleted, read after the idea is locked.
CREATE FUNCTION ideas.apply_signal_rollups() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changes text := format(
        'SELECT c.*, NOT EXISTS (SELECT 1 FROM ideas.ideas x'
        '                         WHERE x.id = c.idea_id AND x.status = ''deleted'') AS live'
        '  FROM (%s) c',
        ideas.rollup_changes(TG_OP,
            'workspace_id, idea_id, platform, (detected_at AT TIME ZONE ''UTC'')::date AS day,'
            ' sentiment, sentiment_score'));
BEGIN
    -- One writer at a time per idea: the days of a pair are read, then rewritten, and whether
    -- the idea is live must not change meanwhile (a deletion updates, so locks, the same row).
    EXECUTE format($q$
        SELECT count(*) FROM (SELECT 1 FROM ideas.ideas i
         WHERE i.id IN (SELECT idea_id FROM (%s) c) ORDER BY i.id FOR NO KEY UPDATE) l
        $q$, ideas.rollup_changes(TG_OP, 'idea_id'));

    EXECUTE format($q$
        INSERT INTO ideas.signal_days AS t
        SELECT workspace_id, day, platform, sentiment, sum(d),
               coalesce(sum(d * sentiment_score::numeric), 0),
               coalesce(sum(d) FILTER (WHERE sentiment_score IS NOT NULL), 0)
          FROM (%s) c WHERE live
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, sentiment) DO UPDATE SET
            n = t.n + EXCLUDED.n, score_sum = t.score_sum + EXCLUDED.score_sum,
            score_n = t.score_n + EXCLUDED.score_n
        $q$, changes);

    -- Days of each pair: counts, new days (prev_day NULL until below), days now empty.
    EXECUTE format($q$
        INSERT INTO ideas.signal_idea_days AS t (workspace_id, idea_id, platform, day, n)
        SELECT workspace_id, idea_id, platform, day, sum(d) FROM (%s) c
         GROUP BY 1, 2, 3, 4 HAVING sum(d) <> 0 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, idea_id, platform, day) DO UPDATE SET n = t.n + EXCLUDED.n
        $q$, changes);

    EXECUTE format($q$
        WITH gone AS (
            DELETE FROM ideas.signal_idea_days t
             USING (SELECT DISTINCT workspace_id, idea_id, platform, day, live FROM (%s) c) r
             WHERE t.workspace_id = r.workspace_id AND t.idea_id = r.idea_id
               AND t.platform = r.platform AND t.day = r.day AND t.n = 0
            RETURNING t.workspace_id, t.day, t.platform, t.prev_day, r.live)
        INSERT INTO ideas.signal_firsts AS t
        SELECT workspace_id, day, platform, prev_day, -count(*) FROM gone
         WHERE live AND prev_day IS NOT NULL
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, prev_day) DO UPDATE SET n = t.n + EXCLUDED.n
        $q$, changes);

    -- Each day of the touched pairs gets its previous day again; where that changed, the
    -- firsts move from the old previous day to the new one.
    EXECUTE format($q$
        WITH pairs AS (SELECT DISTINCT workspace_id, idea_id, platform, live FROM (%s) c),
        lagged AS (
            SELECT t.workspace_id, t.idea_id, t.platform, t.day, t.prev_day AS old_prev,
                   coalesce(lag(t.day) OVER (PARTITION BY t.workspace_id, t.idea_id, t.platform
                                             ORDER BY t.day), '-infinity') AS new_prev, p.live
              FROM pairs p
              JOIN ideas.signal_idea_days t ON t.workspace_id = p.workspace_id
                                           AND t.idea_id = p.idea_id AND t.platform = p.platform),
        changed AS (SELECT * FROM lagged WHERE old_prev IS DISTINCT FROM new_prev),
        moved AS (
            UPDATE ideas.signal_idea_days t SET prev_day = c.new_prev FROM changed c
             WHERE t.workspace_id = c.workspace_id AND t.idea_id = c.idea_id
               AND t.platform = c.platform AND t.day = c.day)
        INSERT INTO ideas.signal_firsts AS t
        SELECT workspace_id, day, platform, prev, sum(d) FROM (
            SELECT workspace_id, day, platform, old_prev AS prev, -1 AS d FROM changed
             WHERE live AND old_prev IS NOT NULL
            UNION ALL
            SELECT workspace_id, day, platform, new_prev, 1 FROM changed WHERE live) x
         GROUP BY 1, 2, 3, 4 HAVING sum(d) <> 0 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, prev_day) DO UPDATE SET n = t.n + EXCLUDED.n
        $q$, changes);
    RETURN NULL;
END $$;

CREATE TRIGGER ideas_rollup_insert AFTER INSERT ON ideas.ideas
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_idea_rollups();
CREATE TRIGGER ideas_rollup_update AFTER UPDATE ON ideas.ideas
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_idea_rollups();
CREATE TRIGGER ideas_rollup_delete AFTER DELETE ON ideas.ideas
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_idea_rollups();

CREATE TRIGGER signals_rollup_insert AFTER INSERT ON ideas.signals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups();
CREATE TRIGGER signals_rollup_update AFTER UPDATE ON ideas.signals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups();
CREATE TRIGGER signals_rollup_delete AFTER DELETE ON ideas.signals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups();

-- The unique ideas per platform come from signal_firsts now: the index that served them goes.
DROP INDEX ideas.signals_an_idea;

ANALYZE ideas.idea_months, ideas.signal_days, ideas.signal_idea_days, ideas.signal_firsts;
