"""Roadmap, revenue impact and categories to the number; validation, scope and plan gating."""

from __future__ import annotations

import psycopg2
import pytest

from tests.support.api import Api, Workspace
from tests.support.processes import System

from .data import Db, ago, utc

A = "/api/v1/analytics"
REPORTS = (
    "summary",
    "ideas-over-time",
    "decisions",
    "funnel",
    "signals",
    "roadmap",
    "revenue-impact",
    "categories",
)


async def test_roadmap_stages_velocity_and_unstaged(api: Api, db: Db) -> None:
    """Stages in position order, empty ones too; velocity counts shipped in the last 30/90 days."""
    now, nxt, later = db.stage("Now", 0), db.stage("Next", 1), db.stage("Later", 2)
    db.idea(roadmap_stage_id=now, total_customer_arr=100, rice_score=10, shipped_at=ago(10))
    db.idea(roadmap_stage_id=now, rice_score=20)
    db.idea(roadmap_stage_id=nxt, total_customer_arr=300)
    db.idea(shipped_at=ago(60))
    db.idea(shipped_at=ago(100))
    db.idea(status="deleted", roadmap_stage_id=now, shipped_at=ago(1), total_customer_arr=5)

    r = await api.get(f"{A}/roadmap")
    assert r.status == 200
    assert r.data == {
        "stages": [
            {
                "id": str(now),
                "name": "Now",
                "ideaCount": 2,
                "totalARR": 100,
                "averageRiceScore": 15,
            },
            {
                "id": str(nxt),
                "name": "Next",
                "ideaCount": 1,
                "totalARR": 300,
                "averageRiceScore": None,
            },
            {
                "id": str(later),
                "name": "Later",
                "ideaCount": 0,
                "totalARR": 0,
                "averageRiceScore": None,
            },
        ],
        "velocity": {"shippedLast30Days": 1, "shippedLast90Days": 2},
        "unstagedCount": 2,
    }


async def test_revenue_impact_by_status_and_top_twenty(api: Api, db: Db) -> None:
    """Top 20 by ARR, highest first, ideas without ARR left out; deleted never count."""
    ids = {}
    for n in range(1, 23):
        ids[n] = db.idea(
            f"Idea {n}",
            status="planned" if n % 2 else "new",
            total_customer_arr=n * 100,
            customer_count=n,
        )
    db.idea("No ARR", status="new")
    db.idea("Gone", status="deleted", total_customer_arr=10**9, customer_count=1)

    r = await api.get(f"{A}/revenue-impact")
    assert r.status == 200
    by = {s["status"]: s for s in r.data["byStatus"]}
    assert len(r.data["byStatus"]) == 9
    odd = sum(n * 100 for n in range(1, 23, 2))
    even = sum(n * 100 for n in range(2, 23, 2))
    assert by["planned"] == {"status": "planned", "ideaCount": 11, "totalARR": odd}
    assert by["new"] == {"status": "new", "ideaCount": 12, "totalARR": even}
    assert by["shipped"] == {"status": "shipped", "ideaCount": 0, "totalARR": 0}
    top = r.data["topIdeas"]
    assert [t["totalCustomerARR"] for t in top] == [n * 100 for n in range(22, 2, -1)]
    assert top[0]["id"] == str(ids[22]) and top[0]["title"] == "Idea 22"
    assert top[0]["customerCount"] == 22 and top[0]["status"] == "new"
    assert top[0]["ideaServiceId"].startswith("IDEA-")


async def test_categories_per_category_metrics(api: Api, db: Db) -> None:
    """Ideas with a category created in the range; most ideas first."""
    db.idea(
        category="ux",
        source="slack",
        vote_count=5,
        signal_count=2,
        rice_score=10,
        total_customer_arr=100,
        created_at=utc(2024, 1, 1),
        decided_at=utc(2024, 1, 3),
        shipped_at=utc(2024, 1, 3),
    )
    db.idea(category="ux", source="api", vote_count=-1, created_at=utc(2024, 1, 2))
    db.idea(
        category="ux",
        source="slack",
        vote_count=3,
        status="rejected",
        created_at=utc(2024, 1, 6),
        decided_at=utc(2024, 1, 10),
    )
    db.idea(category="billing", source="email", created_at=utc(2024, 1, 20))
    db.idea(category=None, created_at=utc(2024, 1, 20))
    db.idea(category="ux", status="deleted", created_at=utc(2024, 1, 20), vote_count=50)
    db.idea(category="ux", created_at=utc(2024, 2, 20), vote_count=50)

    r = await api.get(
        f"{A}/categories", params={"start": "2024-01-01T00:00:00Z", "end": "2024-01-31T23:59:59Z"}
    )
    assert r.status == 200
    assert r.data == [
        {
            "category": "ux",
            "ideaCount": 3,
            "voteCount": 7,
            "signalCount": 2,
            "averageRiceScore": 10,
            "totalARR": 100,
            "decidedCount": 2,
            "shippedCount": 1,
            "averageDaysToDecision": 3,
            "uniqueSourceCount": 2,
        },
        {
            "category": "billing",
            "ideaCount": 1,
            "voteCount": 0,
            "signalCount": 0,
            "averageRiceScore": None,
            "totalARR": 0,
            "decidedCount": 0,
            "shippedCount": 0,
            "averageDaysToDecision": None,
            "uniqueSourceCount": 1,
        },
    ]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "2024-02-01T00:00:00Z", "end": "2024-01-01T00:00:00Z"}, "start"),
        ({"start": "2021-01-01T00:00:00Z", "end": "2023-01-01T00:00:01Z"}, "end"),
        ({"start": "yesterday"}, "start"),
        ({"period": "year"}, "period"),
        ({"group_by": "owner"}, "group_by"),
        ({"colour": "red"}, "colour"),
    ],
)
async def test_bad_query_is_a_validation_error_naming_the_field(
    api: Api, params: dict[str, str], field: str
) -> None:
    """Ranges over two years, start after end, bad values and unknown parameters: 400."""
    r = await api.get(f"{A}/ideas-over-time", params=params)
    assert r.status == 400
    assert r.error["code"] == "validation_error" and r.error["field"] == field


async def test_a_range_of_exactly_two_years_is_allowed(api: Api) -> None:
    r = await api.get(
        f"{A}/categories", params={"start": "2022-01-01T00:00:00Z", "end": "2024-01-01T00:00:00Z"}
    )
    assert r.status == 200 and r.data == []
    r = await api.get(f"{A}/summary", params={"start": "2022-01-01T00:00:00Z"})
    assert r.status == 400 and r.error["field"] == "start"


async def test_starter_plan_and_missing_scope_are_refused(
    new_workspace: object, system: System
) -> None:
    """Starter: 403 plan_required on every report and export; no analytics:read: insufficient_scope."""
    starter: Workspace = await new_workspace(plan="starter")  # type: ignore[operator]
    for name in REPORTS:
        r = await starter.api.get(f"{A}/{name}")
        assert (r.status, r.error["code"]) == (403, "plan_required"), name
    for kind in ("ideas", "customers", "decisions", "signals"):
        r = await starter.api.get(f"/api/v1/export/{kind}")
        assert (r.status, r.error["code"]) == (403, "plan_required"), kind
    pro: Workspace = await new_workspace(plan="pro", scopes="ideas:read")  # type: ignore[operator]
    r = await pro.api.get(f"{A}/summary")
    assert (r.status, r.error["code"]) == (403, "insufficient_scope")
    assert (await pro.api.get(f"{A}/funnel")).status == 403


async def test_reports_see_only_their_workspace(new_workspace: object, system: System) -> None:
    """Another workspace's ideas never show."""
    one: Workspace = await new_workspace(plan="pro")  # type: ignore[operator]
    two: Workspace = await new_workspace(plan="growth")  # type: ignore[operator]
    d = Db(system.database_url, one.id)
    d.idea(created_at=ago(1))
    d.close()
    assert (await one.api.get(f"{A}/summary")).data["ideas"]["total"] == 1
    assert (await two.api.get(f"{A}/summary")).data["ideas"]["total"] == 0


def test_the_analytics_role_can_read_and_nothing_else(system: System) -> None:
    """The role the service switches to holds SELECT on the ideas and customers tables only."""
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:
            for table in (
                "ideas.ideas",
                "ideas.signals",
                "customers.customers",
                "customers.idea_links",
            ):
                cur.execute(
                    "SELECT has_table_privilege('ims_analytics', %s, 'SELECT'),"
                    " has_table_privilege('ims_analytics', %s, 'INSERT, UPDATE, DELETE')",
                    (table, table),
                )
                assert cur.fetchone() == (True, False), table
            cur.execute("SELECT has_table_privilege('ims_analytics', 'gateway.api_keys', 'SELECT')")
            assert cur.fetchone() == (False,)
            cur.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'ims_analytics'")
            assert cur.fetchone() == (False,)
    finally:
        conn.close()


async def test_a_new_workspace_shows_its_three_default_stages(api: Api) -> None:
    """Now, Next and Later exist from the start, empty."""
    r = await api.get(f"{A}/roadmap")
    assert [(s["name"], s["ideaCount"], s["totalARR"]) for s in r.data["stages"]] == [
        ("Now", 0, 0),
        ("Next", 0, 0),
        ("Later", 0, 0),
    ]
    stages = (await api.get("/api/v1/roadmap/stages")).data
    assert [s["id"] for s in stages] == [s["id"] for s in r.data["stages"]]
