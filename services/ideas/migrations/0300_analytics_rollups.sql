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
    -- Writes wait until the caller commits: none can fall between the recount and the commit.
    LOCK TABLE ideas.ideas, ideas.signals IN SHARE ROW EXCLUSIVE MODE;
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

-- Keeping them, with static SQL only (plans made once per connection, about 0.1 ms a write).
-- Every trigger names its transition table `changed_rows` and passes the sign of its rows:
-- +1 for inserted rows, -1 for deleted ones and for the old side of an update.

-- One idea's part of its idea_months row: d times each sum; none for a deleted idea.
CREATE FUNCTION ideas.idea_month_part(i ideas.ideas, d int) RETURNS ideas.idea_months
LANGUAGE sql IMMUTABLE AS $$
    SELECT i.workspace_id, (date_trunc('month', i.created_at AT TIME ZONE 'UTC'))::date,
           i.source, i.category, d::bigint,
           coalesce(d * i.rice_reach::numeric, 0), (d * (i.rice_reach IS NOT NULL)::int)::bigint,
           coalesce(d * i.rice_impact::numeric, 0), (d * (i.rice_impact IS NOT NULL)::int)::bigint,
           coalesce(d * i.rice_confidence::numeric, 0), (d * (i.rice_confidence IS NOT NULL)::int)::bigint,
           coalesce(d * i.rice_effort::numeric, 0), (d * (i.rice_effort IS NOT NULL)::int)::bigint,
           coalesce(d * i.rice_score::numeric, 0), (d * (i.rice_score IS NOT NULL)::int)::bigint
     WHERE i.status <> 'deleted'
$$;

-- Whether an update changed anything the rollups keep.
CREATE FUNCTION ideas.idea_rolled_up_changed(o ideas.ideas, n ideas.ideas) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (o.status = 'deleted', o.workspace_id, o.created_at, o.source, o.category,
            o.rice_reach, o.rice_impact, o.rice_confidence, o.rice_effort, o.rice_score)
           IS DISTINCT FROM
           (n.status = 'deleted', n.workspace_id, n.created_at, n.source, n.category,
            n.rice_reach, n.rice_impact, n.rice_confidence, n.rice_effort, n.rice_score)
$$;

-- Ideas. An update passes its old rows (-1); their new versions are read back from the table
-- (an AFTER STATEMENT trigger sees the statement's result) and added (+1), only for the rows
-- whose rolled-up columns changed, so that votes, counters and edits write nothing here.
CREATE FUNCTION ideas.apply_idea_rollups() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign int := TG_ARGV[0]::int;
    updating boolean := TG_OP = 'UPDATE';
BEGIN
    IF updating AND NOT EXISTS (
        SELECT 1 FROM changed_rows o JOIN ideas.ideas cur ON cur.id = o.id
         WHERE ideas.idea_rolled_up_changed(o, cur)) THEN
        RETURN NULL;
    END IF;

    INSERT INTO ideas.idea_months AS m
    SELECT workspace_id, month, source, category, sum(n), sum(reach_sum), sum(reach_n),
           sum(impact_sum), sum(impact_n), sum(confidence_sum), sum(confidence_n),
           sum(effort_sum), sum(effort_n), sum(score_sum), sum(score_n)
      FROM (SELECT p.* FROM changed_rows o, ideas.idea_month_part(o, sign) p
             WHERE NOT updating OR EXISTS (SELECT 1 FROM ideas.ideas cur
                                            WHERE cur.id = o.id AND ideas.idea_rolled_up_changed(o, cur))
            UNION ALL
            SELECT p.* FROM changed_rows o JOIN ideas.ideas cur ON cur.id = o.id,
                   ideas.idea_month_part(cur, 1) p
             WHERE updating AND ideas.idea_rolled_up_changed(o, cur)) x
     WHERE n IS NOT NULL
     GROUP BY 1, 2, 3, 4
    HAVING (sum(n), sum(reach_sum), sum(reach_n), sum(impact_sum), sum(impact_n),
            sum(confidence_sum), sum(confidence_n), sum(effort_sum), sum(effort_n),
            sum(score_sum), sum(score_n)) <> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
     ORDER BY 1, 2, 3, 4
    ON CONFLICT (workspace_id, month, source, category) DO UPDATE SET
        n = m.n + EXCLUDED.n,
        reach_sum = m.reach_sum + EXCLUDED.reach_sum, reach_n = m.reach_n + EXCLUDED.reach_n,
        impact_sum = m.impact_sum + EXCLUDED.impact_sum, impact_n = m.impact_n + EXCLUDED.impact_n,
        confidence_sum = m.confidence_sum + EXCLUDED.confidence_sum,
        confidence_n = m.confidence_n + EXCLUDED.confidence_n,
        effort_sum = m.effort_sum + EXCLUDED.effort_sum, effort_n = m.effort_n + EXCLUDED.effort_n,
        score_sum = m.score_sum + EXCLUDED.score_sum, score_n = m.score_n + EXCLUDED.score_n;

    IF updating THEN
        -- Ideas deleted (-1) or restored (+1) take their signals out of the signal rollups or
        -- put them back. Two statements, signal_days first: every writer takes the rows of the
        -- rollups in one order (signal_days, then signal_firsts; each sorted by key), so that
        -- none waits for another in a circle (a data-modifying WITH would run last instead).
        INSERT INTO ideas.signal_days AS t
        SELECT s.workspace_id, (s.detected_at AT TIME ZONE 'UTC')::date, s.platform, s.sentiment,
               sum(f.d), coalesce(sum(f.d * s.sentiment_score::numeric), 0),
               coalesce(sum(f.d) FILTER (WHERE s.sentiment_score IS NOT NULL), 0)
          FROM (SELECT cur.workspace_id, cur.id, CASE WHEN cur.status = 'deleted' THEN -1 ELSE 1 END AS d
                  FROM changed_rows o JOIN ideas.ideas cur ON cur.id = o.id
                 WHERE (o.status = 'deleted') <> (cur.status = 'deleted')) f
          JOIN ideas.signals s ON s.workspace_id = f.workspace_id AND s.idea_id = f.id
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, sentiment) DO UPDATE SET
            n = t.n + EXCLUDED.n, score_sum = t.score_sum + EXCLUDED.score_sum,
            score_n = t.score_n + EXCLUDED.score_n;
        INSERT INTO ideas.signal_firsts AS t
        SELECT i.workspace_id, i.day, i.platform, i.prev_day, sum(f.d)
          FROM (SELECT cur.workspace_id, cur.id, CASE WHEN cur.status = 'deleted' THEN -1 ELSE 1 END AS d
                  FROM changed_rows o JOIN ideas.ideas cur ON cur.id = o.id
                 WHERE (o.status = 'deleted') <> (cur.status = 'deleted')) f
          JOIN ideas.signal_idea_days i ON i.workspace_id = f.workspace_id AND i.idea_id = f.id
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, day, platform, prev_day) DO UPDATE SET n = t.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;

-- Signals. An update runs twice, as two triggers: its old rows out (-1), then its new rows in
-- (+1). `live`: the idea is not deleted, read after the idea's row is locked.
CREATE FUNCTION ideas.apply_signal_rollups() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign int := TG_ARGV[0]::int;
BEGIN
    -- One writer at a time per idea: the days of a pair are read, then rewritten, and whether
    -- the idea is live must not change meanwhile (a deletion updates, so locks, the same row).
    PERFORM 1 FROM ideas.ideas i WHERE i.id IN (SELECT idea_id FROM changed_rows)
      ORDER BY i.id FOR NO KEY UPDATE;

    -- The rollups' rows are taken in one order by every writer: signal_days, then
    -- signal_idea_days (whose rows belong to the locked ideas), then signal_firsts; each by a
    -- single statement in key order, so that no two writers wait for each other in a circle.
    INSERT INTO ideas.signal_days AS t
    SELECT c.workspace_id, (c.detected_at AT TIME ZONE 'UTC')::date, c.platform, c.sentiment,
           sign * count(*), coalesce(sign * sum(c.sentiment_score::numeric), 0),
           sign * count(c.sentiment_score)
      FROM changed_rows c
     WHERE NOT EXISTS (SELECT 1 FROM ideas.ideas x WHERE x.id = c.idea_id AND x.status = 'deleted')
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (workspace_id, day, platform, sentiment) DO UPDATE SET
        n = t.n + EXCLUDED.n, score_sum = t.score_sum + EXCLUDED.score_sum,
        score_n = t.score_n + EXCLUDED.score_n;

    -- Days of each pair: counts; a new day gets prev_day NULL until the next statement.
    INSERT INTO ideas.signal_idea_days AS t (workspace_id, idea_id, platform, day, n)
    SELECT workspace_id, idea_id, platform, (detected_at AT TIME ZONE 'UTC')::date, sign * count(*)
      FROM changed_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (workspace_id, idea_id, platform, day) DO UPDATE SET n = t.n + EXCLUDED.n;

    -- Each day with signals of the touched pairs gets its previous day again; where that
    -- changed, the firsts move from the old previous day to the new one. A day left without
    -- signals (n = 0) takes its count out of the firsts and goes below.
    WITH pairs AS (
        SELECT DISTINCT c.workspace_id, c.idea_id, c.platform,
               NOT EXISTS (SELECT 1 FROM ideas.ideas x
                            WHERE x.id = c.idea_id AND x.status = 'deleted') AS live
          FROM changed_rows c),
    days AS (
        SELECT t.workspace_id, t.idea_id, t.platform, t.day, t.n, t.prev_day AS old_prev, p.live
          FROM pairs p
          JOIN ideas.signal_idea_days t ON t.workspace_id = p.workspace_id
                                       AND t.idea_id = p.idea_id AND t.platform = p.platform),
    linked AS (
        SELECT d.*, coalesce(lag(day) OVER (PARTITION BY workspace_id, idea_id, platform
                                            ORDER BY day), '-infinity') AS new_prev
          FROM days d WHERE n <> 0),
    changed AS (SELECT * FROM linked WHERE old_prev IS DISTINCT FROM new_prev),
    moved AS (
        UPDATE ideas.signal_idea_days t SET prev_day = c.new_prev FROM changed c
         WHERE t.workspace_id = c.workspace_id AND t.idea_id = c.idea_id
           AND t.platform = c.platform AND t.day = c.day)
    INSERT INTO ideas.signal_firsts AS t
    SELECT workspace_id, day, platform, prev, sum(d) FROM (
        SELECT workspace_id, day, platform, old_prev AS prev, -1 AS d FROM changed
         WHERE live AND old_prev IS NOT NULL
        UNION ALL
        SELECT workspace_id, day, platform, new_prev, 1 FROM changed WHERE live
        UNION ALL
        SELECT workspace_id, day, platform, old_prev, -1 FROM days
         WHERE n = 0 AND live AND old_prev IS NOT NULL) x
     GROUP BY 1, 2, 3, 4 HAVING sum(d) <> 0 ORDER BY 1, 2, 3, 4
    ON CONFLICT (workspace_id, day, platform, prev_day) DO UPDATE SET n = t.n + EXCLUDED.n;

    IF sign < 0 THEN
        DELETE FROM ideas.signal_idea_days t
         USING (SELECT DISTINCT workspace_id, idea_id, platform FROM changed_rows) p
         WHERE t.workspace_id = p.workspace_id AND t.idea_id = p.idea_id
           AND t.platform = p.platform AND t.n = 0;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER ideas_rollup_insert AFTER INSERT ON ideas.ideas
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_idea_rollups('1');
CREATE TRIGGER ideas_rollup_update AFTER UPDATE ON ideas.ideas
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_idea_rollups('-1');
CREATE TRIGGER ideas_rollup_delete AFTER DELETE ON ideas.ideas
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_idea_rollups('-1');

-- Same-event triggers fire in name order: the old rows of an update go out before the new come in.
CREATE TRIGGER signals_rollup_insert AFTER INSERT ON ideas.signals
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups('1');
CREATE TRIGGER signals_rollup_update_1_old AFTER UPDATE ON ideas.signals
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups('-1');
CREATE TRIGGER signals_rollup_update_2_new AFTER UPDATE ON ideas.signals
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups('1');
CREATE TRIGGER signals_rollup_delete AFTER DELETE ON ideas.signals
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_signal_rollups('-1');

-- The unique ideas per platform come from signal_firsts now: the index that served them goes.
DROP INDEX ideas.signals_an_idea;

ANALYZE ideas.idea_months, ideas.signal_days, ideas.signal_idea_days, ideas.signal_firsts;
