-- The status counters in one grouped upsert per statement, rows locked in (workspace, status)
-- order: two transactions moving ideas between the same statuses in opposite directions cannot
-- deadlock, and an update that changes no status (votes, edits) touches no counter at all.
DROP TRIGGER ideas_count_insert ON ideas.ideas;
DROP TRIGGER ideas_count_update ON ideas.ideas;
DROP TRIGGER ideas_count_delete ON ideas.ideas;
DROP FUNCTION ideas.count_status();

CREATE FUNCTION ideas.apply_status_deltas() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ideas.status_counts AS c (workspace_id, status, n)
        SELECT workspace_id, status, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (workspace_id, status) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ideas.status_counts AS c (workspace_id, status, n)
        SELECT workspace_id, status, -count(*) FROM old_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (workspace_id, status) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO ideas.status_counts AS c (workspace_id, status, n)
        SELECT workspace_id, status, sum(d) FROM (
            SELECT workspace_id, status, -1 AS d FROM old_rows
            UNION ALL
            SELECT workspace_id, status, 1 AS d FROM new_rows) x
        GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
        ON CONFLICT (workspace_id, status) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER ideas_count_insert AFTER INSERT ON ideas.ideas
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_status_deltas();
CREATE TRIGGER ideas_count_update AFTER UPDATE ON ideas.ideas
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_status_deltas();
CREATE TRIGGER ideas_count_delete AFTER DELETE ON ideas.ideas
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ideas.apply_status_deltas();
