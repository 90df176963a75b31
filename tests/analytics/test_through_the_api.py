"""Reports and exports over data made through the public API only."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.api import Api


async def _eventually(check: Any, timeout: float = 5.0) -> Any:
    """The ideas service learns links and customer ARR from events, within a second or so."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result is not None or asyncio.get_running_loop().time() > deadline:
            return result
        await asyncio.sleep(0.1)


async def test_ideas_made_and_decided_through_the_api_show_everywhere(api: Api) -> None:
    """Create, score, ship, reject, delete and link through the API; every report agrees."""
    made = []
    for title, category in (
        ("Dark mode", "ux"),
        ("SSO", "security"),
        ("Exports", "ux"),
        ("Spam", None),
    ):
        body: dict[str, Any] = {"title": title, "source": "slack"}
        if category:
            body["category"] = category
        r = await api.post("/api/v1/ideas", json=body)
        assert r.status == 200, r.body
        made.append(r.data)
    dark, sso, exports, spam = (i["id"] for i in made)
    r = await api.patch(
        f"/api/v1/ideas/{dark}",
        json={
            "status": "shipped",
            "riceReach": 100,
            "riceImpact": 2,
            "riceConfidence": 0.5,
            "riceEffort": 1,
        },
    )
    assert r.status == 200, r.body
    assert (await api.patch(f"/api/v1/ideas/{sso}", json={"status": "rejected"})).status == 200
    assert (await api.delete(f"/api/v1/ideas/{spam}")).status == 200
    customer = (await api.post("/api/v1/customers", json={"name": "Acme", "arr": 5000})).data
    r = await api.post(f"/api/v1/ideas/{exports}/customers", json={"customerId": customer["id"]})
    assert r.status == 200, r.body

    s = (await api.get("/api/v1/analytics/summary")).data
    assert s["ideas"] == {"total": 3, "active": 1, "thisMonth": 3}
    assert s["byStatus"] == {"shipped": 1, "rejected": 1, "new": 1}
    assert s["bySource"] == {"slack": 3}
    assert s["categories"] == [{"category": "ux", "count": 2}, {"category": "security", "count": 1}]
    assert s["rice"]["averageScore"] == 100 and s["rice"]["scoredCount"] == 1
    assert s["customers"] == {"total": 1, "linked": 1}
    assert s["revenue"] == {"totalARR": 5000, "totalMRR": 0, "linkedARR": 5000}

    d = (await api.get("/api/v1/analytics/decisions")).data
    assert d["summary"]["total"] == 2
    assert d["summary"]["byOutcome"] == {"shipped": 1, "rejected_scope": 1}
    assert sum(b["count"] for b in d["overTime"]) == 2

    f = (await api.get("/api/v1/analytics/funnel")).data
    assert {s["status"]: s["count"] for s in f["stages"] if s["count"]} == {
        "new": 1,
        "shipped": 1,
        "rejected": 1,
    }
    assert f["averageDays"]["capturedToShipped"] < 1

    rm = (await api.get("/api/v1/analytics/roadmap")).data
    assert rm["velocity"] == {"shippedLast30Days": 1, "shippedLast90Days": 1}
    assert rm["unstagedCount"] == 3

    async def top() -> Any:
        data = (await api.get("/api/v1/analytics/revenue-impact")).data
        return data if data["topIdeas"] else None

    rev = await _eventually(top)
    assert rev is not None, "the link never reached the idea's ARR"
    assert rev["topIdeas"] == [
        {
            "id": exports,
            "ideaServiceId": made[2]["ideaServiceId"],
            "title": "Exports",
            "status": "new",
            "totalCustomerARR": 5000,
            "customerCount": 1,
        }
    ]

    rows = (await api.get("/api/v1/export/ideas", params={"include_customer_count": True})).json
    assert {r["id"]: r["customerCount"] for r in rows} == {dark: 0, sso: 0, exports: 1}
    decided = (await api.get("/api/v1/export/decisions")).json
    assert {r["id"]: r["closureCategory"] for r in decided} == {
        dark: "shipped",
        sso: "rejected_scope",
    }
