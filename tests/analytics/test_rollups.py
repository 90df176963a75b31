"""The rollups behind the summary and signals reports (ideas migration 0300) against the same
numbers recomputed from ideas.ideas and ideas.signals, after every kind of write: single and
batched inserts, status changes into and out of `deleted` (one idea and many at once), edits
that move an idea between rollup rows, signals deleted, moved to another day, platform or idea,
ideas removed, and signal writes from several connections at once on the same ideas."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg2
import psycopg2.extras

from tests.support.api import Api, Workspace
from tests.support.processes import ROOT, System

psycopg2.extras.register_uuid()

# (kept, recomputed) per rollup table; rows with zero counts may be kept, so they are left out.
PAIRS = {
    "idea_months": (
        """SELECT month, source, category, n, reach_sum, reach_n, impact_sum, impact_n,
                  confidence_sum, confidence_n, effort_sum, effort_n, score_sum, score_n
             FROM ideas.idea_months WHERE workspace_id = %(ws)s AND n <> 0""",
        """SELECT (date_trunc('month', created_at AT TIME ZONE 'UTC'))::date, source, category,
                  count(*), coalesce(sum(rice_reach::numeric), 0), count(rice_reach),
                  coalesce(sum(rice_impact::numeric), 0), count(rice_impact),
                  coalesce(sum(rice_confidence::numeric), 0), count(rice_confidence),
                  coalesce(sum(rice_effort::numeric), 0), count(rice_effort),
                  coalesce(sum(rice_score::numeric), 0), count(rice_score)
             FROM ideas.ideas WHERE workspace_id = %(ws)s AND status <> 'deleted'
            GROUP BY 1, 2, 3""",
    ),
    "signal_days": (
        """SELECT day, platform, sentiment, n, score_sum, score_n FROM ideas.signal_days
            WHERE workspace_id = %(ws)s AND n <> 0""",
        """SELECT (s.detected_at AT TIME ZONE 'UTC')::date, s.platform, s.sentiment, count(*),
                  coalesce(sum(s.sentiment_score::numeric), 0), count(s.sentiment_score)
             FROM ideas.signals s
            WHERE s.workspace_id = %(ws)s AND NOT EXISTS (
                  SELECT 1 FROM ideas.ideas d WHERE d.id = s.idea_id AND d.status = 'deleted')
            GROUP BY 1, 2, 3""",
    ),
    "signal_idea_days": (
        """SELECT idea_id, platform, day, n, prev_day FROM ideas.signal_idea_days
            WHERE workspace_id = %(ws)s""",
        """SELECT idea_id, platform, day, n, coalesce(lag(day) OVER (
                      PARTITION BY idea_id, platform ORDER BY day), '-infinity')
             FROM (SELECT idea_id, platform, (detected_at AT TIME ZONE 'UTC')::date AS day,
                          count(*) AS n
                     FROM ideas.signals WHERE workspace_id = %(ws)s GROUP BY 1, 2, 3) g""",
    ),
    "signal_firsts": (
        """SELECT day, platform, prev_day, n FROM ideas.signal_firsts
            WHERE workspace_id = %(ws)s AND n <> 0""",
        """SELECT day, platform, prev, count(*) FROM (
               SELECT idea_id, platform, day, coalesce(lag(day) OVER (
                          PARTITION BY idea_id, platform ORDER BY day), '-infinity') AS prev
                 FROM (SELECT DISTINCT idea_id, platform,
                              (detected_at AT TIME ZONE 'UTC')::date AS day
                         FROM ideas.signals WHERE workspace_id = %(ws)s) s) x
            WHERE NOT EXISTS (SELECT 1 FROM ideas.ideas d
                               WHERE d.id = x.idea_id AND d.status = 'deleted')
            GROUP BY 1, 2, 3""",
    ),
}
PLATFORMS = ("slack", "teams", "zendesk", "discord")


def differences(conn: Any, ws: uuid.UUID) -> dict[str, Any]:
    out = {}
    with conn.cursor() as cur:
        for name, (kept_sql, fresh_sql) in PAIRS.items():
            cur.execute(kept_sql, {"ws": ws})
            kept = set(cur.fetchall())
            cur.execute(fresh_sql, {"ws": ws})
            fresh = set(cur.fetchall())
            if kept != fresh:
                out[name] = {
                    "kept only": sorted(kept - fresh, key=str)[:5],
                    "recomputed only": sorted(fresh - kept, key=str)[:5],
                }
    return out


class Writer:
    def __init__(self, conn: Any, ws: uuid.UUID, rnd: random.Random) -> None:
        self.conn, self.ws, self.rnd = conn, ws, rnd
        self.ideas: list[uuid.UUID] = []
        self.signals: list[uuid.UUID] = []
        self.now = datetime.now(UTC)

    def ideas_(self, k: int) -> None:
        rnd, rows = self.rnd, []
        for _ in range(k):
            rice = rnd.random() < 0.6
            iid = uuid.uuid4()
            self.ideas.append(iid)
            rows.append(
                (
                    self.ws,
                    iid,
                    rnd.randrange(1 << 40),
                    "t",
                    "t",
                    rnd.choice(["new", "planned", "shipped", "deleted"]),
                    rnd.choice(["slack", "api", "email"]),
                    rnd.choice(["a", "b", None]),
                    rnd.choice([None, 1.5, 10.0]) if rice else None,
                    0.1 if rice else None,
                    rnd.choice([None, 1 / 3]),
                    2.0 if rice else None,
                    rnd.choice([None, 0.1, 7.25]),
                    self.now - timedelta(days=rnd.randint(0, 120), hours=rnd.random()),
                )
            )
        with self.conn.cursor() as cur:
            psycopg2.extras.execute_values(
                cur,
                """
                INSERT INTO ideas.ideas (workspace_id, id, number, title, title_key, status,
                    source, category, rice_reach, rice_impact, rice_confidence, rice_effort,
                    rice_score, created_at) VALUES %s""",
                rows,
            )

    def signals_(self, k: int, ideas: list[uuid.UUID] | None = None) -> None:
        rnd, rows = self.rnd, []
        for _ in range(k):
            sid = uuid.uuid4()
            self.signals.append(sid)
            day = self.now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
                days=rnd.choice([0, 1, 2, 3, 5, 8, 13, 21, 30])
            )
            at = day + rnd.choice(
                [
                    timedelta(0),
                    timedelta(hours=rnd.randint(1, 23)),
                    timedelta(days=1, microseconds=-1),
                ]
            )
            rows.append(
                (
                    self.ws,
                    sid,
                    rnd.choice(ideas or self.ideas),
                    rnd.choice(PLATFORMS),
                    0.9,
                    rnd.choice(["positive", "negative", None]),
                    rnd.choice([None, 0.1, -0.7, 1 / 3]),
                    at,
                )
            )
        with self.conn.cursor() as cur:
            psycopg2.extras.execute_values(
                cur,
                """
                INSERT INTO ideas.signals (workspace_id, id, idea_id, platform, similarity,
                    sentiment, sentiment_score, detected_at) VALUES %s""",
                rows,
            )

    def mutate(self) -> None:
        rnd, iid, sid = self.rnd, self.rnd.choice(self.ideas), self.rnd.choice(self.signals)
        statements = [
            ("UPDATE ideas.ideas SET status = 'deleted' WHERE id = %s", (iid,)),
            ("UPDATE ideas.ideas SET status = 'planned' WHERE id = %s", (iid,)),
            (
                "UPDATE ideas.ideas SET status = CASE WHEN status = 'deleted' THEN 'new'"
                " ELSE 'deleted' END WHERE workspace_id = %s AND number %% 3 = 0",
                (self.ws,),
            ),
            (
                "UPDATE ideas.ideas SET category = 'c', source = 'api', rice_score = NULL,"
                " vote_count = vote_count + 1 WHERE id = %s",
                (iid,),
            ),
            (
                "UPDATE ideas.ideas SET created_at = created_at - interval '40 days',"
                " rice_reach = 3 WHERE id = %s",
                (iid,),
            ),
            (
                "UPDATE ideas.ideas SET vote_count = vote_count + 1 WHERE workspace_id = %s",
                (self.ws,),
            ),
            ("DELETE FROM ideas.signals WHERE id = %s", (sid,)),
            (
                "UPDATE ideas.signals SET detected_at = detected_at - interval '3 days',"
                " platform = 'slack' WHERE id = %s",
                (sid,),
            ),
            ("UPDATE ideas.signals SET idea_id = %s WHERE id = %s", (iid, sid)),
            (
                "DELETE FROM ideas.signals WHERE workspace_id = %s"
                " AND detected_at > now() - interval '2 days'",
                (self.ws,),
            ),
        ]
        with self.conn.cursor() as cur:
            cur.execute(*rnd.choice(statements))
        if rnd.random() < 0.3:
            self.signals_(rnd.randint(1, 15))


def test_rollups_equal_recomputation_after_every_kind_of_write(system: System) -> None:
    conn = psycopg2.connect(system.database_url)
    conn.autocommit = True
    try:
        w = Writer(conn, uuid.uuid4(), random.Random(20261122))
        w.ideas_(40)
        for _ in range(60):
            w.signals_(1)
        w.signals_(200)
        assert differences(conn, w.ws) == {}
        for step in range(80):
            w.mutate()
            if step % 10 == 9:
                assert differences(conn, w.ws) == {}, f"after step {step}"
        with conn.cursor() as cur:
            cur.execute("DELETE FROM ideas.ideas WHERE id = %s", (w.ideas[0],))
        assert "idea_months" not in differences(conn, w.ws)
    finally:
        conn.close()


def test_rollups_hold_under_concurrent_signal_writes_on_the_same_ideas(system: System) -> None:
    """Writers on several connections add signals to the same few ideas on neighbouring days
    (each insert reads and rewrites the previous-day links of its pairs) while another deletes
    and restores those ideas and now and then rebuilds the rollups: the idea's row lock
    serializes the writers, the rebuild's table lock holds them back, so nothing drifts and no
    two wait for each other in a circle."""
    setup = psycopg2.connect(system.database_url)
    setup.autocommit = True
    ws = uuid.uuid4()
    try:
        base = Writer(setup, ws, random.Random(1))
        base.ideas_(3)
        hot = list(base.ideas)
        errors: list[BaseException] = []

        def run(seed: int, flips: bool) -> None:
            conn = psycopg2.connect(system.database_url)
            conn.autocommit = True
            try:
                w = Writer(conn, ws, random.Random(seed))
                w.ideas = hot
                for i in range(40):
                    if flips and i % 8 == 7:  # the rebuild holds writes back until it commits
                        with conn.cursor() as cur:
                            cur.execute("SELECT ideas.rebuild_rollups(%s)", (ws,))
                    elif flips:
                        with conn.cursor() as cur:
                            cur.execute(
                                "UPDATE ideas.ideas SET status = %s WHERE id = %s",
                                ("deleted" if i % 2 else "new", hot[i % len(hot)]),
                            )
                    else:
                        w.signals_(w.rnd.randint(1, 3), hot)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            finally:
                conn.close()

        threads = [threading.Thread(target=run, args=(seed, seed == 0)) for seed in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert differences(setup, ws) == {}
    finally:
        setup.close()


def test_rebuild_restores_a_workspace_and_leaves_the_others(system: System) -> None:
    """ideas.rebuild_rollups(workspace), what a bulk load with the triggers off calls at its end,
    recomputes that workspace's rollups from the rows and touches no other workspace's."""
    conn = psycopg2.connect(system.database_url)
    conn.autocommit = True
    try:
        mine, other = (Writer(conn, uuid.uuid4(), random.Random(seed)) for seed in (3, 4))
        for w in (mine, other):
            w.ideas_(15)
            w.signals_(80)
        with conn.cursor() as cur:
            for table in ("idea_months", "signal_days", "signal_idea_days", "signal_firsts"):
                cur.execute(
                    f"UPDATE ideas.{table} SET n = n + 5 WHERE workspace_id IN (%s, %s)",
                    (mine.ws, other.ws),
                )
            cur.execute("SELECT ideas.rebuild_rollups(%s)", (mine.ws,))
        assert differences(conn, mine.ws) == {}
        assert set(differences(conn, other.ws)) == set(PAIRS)
    finally:
        conn.close()


async def test_ideasctl_rebuild_rollups_repairs_the_reports(
    system: System, api: Api, ws: Workspace
) -> None:
    """`ideasctl analytics rebuild-rollups --workspace ID` puts damaged rollups right: the
    summary and signals reports answer from the rows again."""
    conn = psycopg2.connect(system.database_url)
    conn.autocommit = True
    try:
        w = Writer(conn, uuid.UUID(ws.id), random.Random(5))
        w.ideas_(12)
        w.signals_(50)
        want = {
            path: (await api.get(path)).data
            for path in ("/api/v1/analytics/summary", "/api/v1/analytics/signals")
        }
        with conn.cursor() as cur:
            for table in ("idea_months", "signal_days", "signal_idea_days", "signal_firsts"):
                cur.execute(f"UPDATE ideas.{table} SET n = n + 3 WHERE workspace_id = %s", (w.ws,))
        assert (await api.get("/api/v1/analytics/summary")).data != want[
            "/api/v1/analytics/summary"
        ]
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "services.ctl",
                "analytics",
                "rebuild-rollups",
                "--workspace",
                ws.id,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**system.env()},
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert result["workspaceId"] == ws.id and result["rows"]["signal_idea_days"] > 0
        assert differences(conn, w.ws) == {}
        for path, data in want.items():
            assert (await api.get(path)).data == data
        bad = subprocess.run(
            [
                sys.executable,
                "-m",
                "services.ctl",
                "analytics",
                "rebuild-rollups",
                "--workspace",
                "nope",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**system.env()},
            timeout=60,
        )
        assert bad.returncode != 0 and "UUID" in bad.stderr
    finally:
        conn.close()


def test_bulk_seed_loads_with_the_triggers_off_and_rebuilds(
    system: System, monkeypatch: Any
) -> None:
    """The seed's bulk path (from 100,000 ideas; lowered here) loads without the insert triggers
    and rebuilds the workspace's rollups at the end: they equal a recomputation, and every
    trigger is on again."""
    from services.ctl import seed as seeding
    from tests.support.api import make_workspace

    monkeypatch.setattr(seeding, "BULK", 50)
    ws = make_workspace(system.database_url)["id"]
    conn = psycopg2.connect(system.database_url, options="-c timezone=UTC")
    try:
        seeding.seed(conn, ws, ideas=300, customers=20)
        conn.autocommit = True
        assert differences(conn, uuid.UUID(ws)) == {}
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM ideas.signal_idea_days WHERE workspace_id = %s", (ws,)
            )
            assert cur.fetchone()[0] > 0
            cur.execute(
                "SELECT tgname FROM pg_trigger WHERE tgname LIKE '%%\\_rollup\\_%%'"
                " AND tgenabled = 'D'"
            )
            assert cur.fetchall() == []
    finally:
        conn.close()
