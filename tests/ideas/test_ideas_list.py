"""The ideas list: every filter and sort, ties and nulls, keyset cursors, tampering, totals."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import psycopg2

from tests.support.api import Api
from tests.support.processes import System


async def make(api: Api, n: int, **fields: object) -> list[dict]:
    r = await api.post(
        "/api/v1/ideas/batch", json={"ideas": [{"title": f"Idea {k}", **fields} for k in range(n)]}
    )
    assert r.status == 200, r.json
    return r.data["ideas"]  # type: ignore[no-any-return]


async def all_pages(api: Api, params: dict, limit: int = 2) -> list[dict]:
    out, cursor = [], None
    for _ in range(100):
        r = await api.get("/api/v1/ideas", params={**params, "limit": limit, "cursor": cursor})
        assert r.status == 200, r.json
        out += r.data
        cursor = r.json["pagination"]["nextCursor"]
        assert r.json["pagination"]["hasMore"] is (cursor is not None)
        if cursor is None:
            return out
    raise AssertionError("too many pages")


def sql(system: System, statement: str, params: tuple = ()) -> None:
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute(statement, params)
    conn.close()


async def test_default_order_total_and_pages(api: Api) -> None:
    """Newest first by default; total counts every match; pages neither skip nor repeat."""
    ideas = await make(api, 7)
    r = await api.get("/api/v1/ideas", params={"limit": 3})
    assert r.json["pagination"]["total"] == 7 and r.json["pagination"]["limit"] == 3
    got = await all_pages(api, {}, limit=3)
    expected = sorted(ideas, key=lambda i: (i["createdAt"], i["id"]), reverse=True)
    assert [i["id"] for i in got] == [i["id"] for i in expected]
    asc = await all_pages(api, {"order": "asc"}, limit=2)
    assert [i["id"] for i in asc] == [i["id"] for i in reversed(expected)]


async def test_inserts_while_paging_cause_no_skip_or_repeat(api: Api) -> None:
    """Ideas created between pages never make a page skip or repeat an older idea."""
    before = await make(api, 6)
    seen: list[str] = []
    r = await api.get("/api/v1/ideas", params={"limit": 2})
    seen += [i["id"] for i in r.data]
    cursor = r.json["pagination"]["nextCursor"]
    while cursor:
        await make(api, 2)
        r = await api.get("/api/v1/ideas", params={"limit": 2, "cursor": cursor})
        seen += [i["id"] for i in r.data]
        cursor = r.json["pagination"]["nextCursor"]
    assert sorted(seen) == sorted(i["id"] for i in before) and len(seen) == len(set(seen))


async def test_cursor_tampering_and_mismatch(api: Api) -> None:
    """A forged, altered or foreign cursor is 400 validation_error on `cursor`."""
    await make(api, 3)
    r = await api.get("/api/v1/ideas", params={"limit": 1, "sort": "voteCount"})
    cursor = r.json["pagination"]["nextCursor"]
    body, sig = cursor.split(".")
    bad = [cursor + "x", body[:-2] + "AA." + sig, "garbage", "", "a.b", body + "." + sig[::-1]]
    for c in bad:
        r = await api.get("/api/v1/ideas", params={"limit": 1, "sort": "voteCount", "cursor": c})
        if c == "":
            continue
        assert r.status == 400 and r.error["field"] == "cursor", c
    for params in (
        {"sort": "createdAt"},
        {"sort": "voteCount", "order": "asc"},
        {"sort": "voteCount", "status": "new"},
        {"sort": "voteCount", "search": "x"},
    ):
        r = await api.get("/api/v1/ideas", params={"limit": 1, "cursor": cursor, **params})
        assert r.status == 400 and r.error["field"] == "cursor", params


async def test_sort_ties_break_by_id(api: Api) -> None:
    """Equal sort keys are ordered by id in the sort's order, across pages."""
    ideas = await make(api, 5)
    ids = sorted(i["id"] for i in ideas)
    desc = await all_pages(api, {"sort": "voteCount"}, limit=2)
    assert [i["id"] for i in desc] == ids[::-1]
    asc = await all_pages(api, {"sort": "signalCount", "order": "asc"}, limit=2)
    assert [i["id"] for i in asc] == ids


async def test_nullable_sort_keeps_nulls_last(api: Api) -> None:
    """riceScore sorts scored ideas first in both orders, unscored ones last by id."""
    ideas = await make(api, 5)
    scores = {ideas[0]["id"]: 10.0, ideas[1]["id"]: 50.0, ideas[2]["id"]: 10.0}
    for idea_id, reach in scores.items():
        await api.patch(
            f"/api/v1/ideas/{idea_id}",
            json={"riceReach": reach, "riceImpact": 1, "riceConfidence": 1, "riceEffort": 1},
        )
    nulls = sorted(i["id"] for i in ideas[3:])
    tied = sorted([ideas[0]["id"], ideas[2]["id"]])
    desc = [i["id"] for i in await all_pages(api, {"sort": "riceScore"}, limit=2)]
    assert desc == [ideas[1]["id"], *tied[::-1], *nulls[::-1]]
    asc = [i["id"] for i in await all_pages(api, {"sort": "riceScore", "order": "asc"}, limit=1)]
    assert asc == [*tied, ideas[1]["id"], *nulls]


async def test_every_sort_key_is_accepted(api: Api, system: System, ws) -> None:
    """Each sort key orders by its field (nulls last) in both orders."""
    ideas = await make(api, 4)
    day = datetime(2025, 1, 1, tzinfo=UTC)
    for n, idea in enumerate(ideas[:3]):
        sql(
            system,
            "UPDATE ideas.ideas SET validation_score = %s, total_customer_arr = %s,"
            " shipped_at = %s, decided_at = %s, signal_count = %s, last_activity_at = %s,"
            " vote_count = %s WHERE id = %s",
            (
                n * 10,
                1000 * (3 - n),
                day + timedelta(days=n),
                day - timedelta(days=n),
                n,
                day + timedelta(hours=n),
                5 - n,
                idea["id"],
            ),
        )
    fields = {
        "validationScore": lambda i: i["validation"]["score"],
        "totalCustomerARR": lambda i: i["totalCustomerARR"],
        "shippedAt": lambda i: i["shippedAt"],
        "decidedAt": lambda i: i["decidedAt"],
        "signalCount": lambda i: i["signalCount"],
        "voteCount": lambda i: i["voteCount"],
        "lastActivityAt": lambda i: i["lastActivityAt"],
        "createdAt": lambda i: i["createdAt"],
    }
    for sort, get in fields.items():
        for order in ("asc", "desc"):
            got = await all_pages(api, {"sort": sort, "order": order}, limit=3)
            assert len(got) == 4, sort
            keyed = [get(i) for i in got]
            present = [k for k in keyed if k is not None]
            assert keyed[: len(present)] == present, (sort, order)  # nulls last
            norm = [datetime.fromisoformat(k) if isinstance(k, str) else k for k in present]
            assert norm == sorted(norm, reverse=order == "desc"), (sort, order, keyed)


async def test_filters(api: Api, system: System, ws) -> None:
    """status, source, category, destination, dates, owner, product, tag, customers, ARR."""
    a, b, c = await make(api, 3, category="ui")
    await api.post("/api/v1/ideas", json={"title": "Other", "source": "slack", "category": "api"})
    product, tag = uuid.uuid4(), uuid.uuid4()
    sql(
        system,
        "INSERT INTO ideas.products (workspace_id, id, name) VALUES (%s, %s, 'Web')",
        (ws.id, product),
    )
    sql(
        system,
        "INSERT INTO ideas.tags (workspace_id, id, name) VALUES (%s, %s, 'bug')",
        (ws.id, tag),
    )
    sql(system, "INSERT INTO ideas.idea_tags VALUES (%s, %s, %s)", (ws.id, b["id"], tag))
    sql(
        system,
        "UPDATE ideas.ideas SET product_id = %s, destination = 'jira',"
        " decision_owner_email = 'ann@x.io', total_customer_arr = 5000, customer_count = 2"
        " WHERE id = %s",
        (product, a["id"]),
    )
    sql(
        system,
        "UPDATE ideas.ideas SET total_customer_arr = 100, customer_count = 1 WHERE id = %s",
        (c["id"],),
    )
    await api.patch(f"/api/v1/ideas/{c['id']}", json={"status": "shipped"})
    await api.patch(f"/api/v1/ideas/{b['id']}", json={"status": "rejected"})

    async def ids(**params: object) -> set[str]:
        r = await api.get("/api/v1/ideas", params=params)
        assert r.status == 200, r.json
        assert r.json["pagination"]["total"] == len(r.data), params
        return {i["id"] for i in r.data}

    assert await ids(status="shipped") == {c["id"]}
    assert await ids(category="ui") == {a["id"], b["id"], c["id"]}
    assert len(await ids(source="slack")) == 1
    assert await ids(source="api", category="ui", status="new") == {a["id"]}
    assert await ids(destination="jira") == {a["id"]}
    assert await ids(product_id=str(product)) == {a["id"]}
    assert await ids(tag_id=str(tag)) == {b["id"]}
    assert await ids(decision_owner="ANN@x.io") == {a["id"]}
    assert await ids(has_customers=True) == {a["id"], c["id"]}
    assert c["id"] not in await ids(has_customers=False)
    assert await ids(min_arr=1000) == {a["id"]}
    assert await ids(min_arr=100) == {a["id"], c["id"]}
    now = datetime.now(UTC)
    assert await ids(shipped_since=(now - timedelta(minutes=1)).isoformat()) == {c["id"]}
    assert await ids(decided_since=(now - timedelta(minutes=1)).isoformat()) == {b["id"], c["id"]}
    assert await ids(since=(now + timedelta(minutes=1)).isoformat()) == set()
    assert len(await ids(since=(now - timedelta(minutes=5)).isoformat())) == 4
    assert await ids(updated_since=(now - timedelta(seconds=30)).isoformat()) >= {b["id"], c["id"]}
    stage = (await api.get("/api/v1/roadmap/stages")).data[0]["id"]
    assert await ids(roadmapStageId=stage) == set()


async def test_search_matches_every_word(api: Api) -> None:
    """search: case-insensitive, title or summary, every word must match."""
    r = await api.post(
        "/api/v1/ideas/batch",
        json={
            "ideas": [
                {"title": "Dark mode for the dashboard"},
                {"title": "Export", "summary": "CSV of DARK data"},
                {"title": "Light theme"},
                {"title": "100% sure_thing"},
            ]
        },
    )
    dark, export, light, pct = [i["id"] for i in r.data["ideas"]]

    async def ids(text: str) -> set[str]:
        r = await api.get("/api/v1/ideas", params={"search": text})
        assert r.json["pagination"]["total"] == len(r.data)
        return {i["id"] for i in r.data}

    assert await ids("dark") == {dark, export}
    assert await ids("DARK dashboard") == {dark}
    assert await ids("dash") == {dark}
    assert await ids("theme light") == {light}
    assert await ids("dark light") == set()
    assert (
        await ids("100%") == {pct}
        and await ids("e_t") == {pct}
        and await ids("s_x") == set()
        and await ids("%") == {pct}
    )


async def test_bad_query_parameters(api: Api) -> None:
    """Bad sort, order, enum, limit, date, uuid, number and unknown parameters are 400."""
    cases = {
        "sort": "title",
        "order": "up",
        "status": "open",
        "source": "myspace",
        "limit": "0",
        "since": "yesterday",
        "roadmapStageId": "x",
        "min_arr": "lots",
        "has_customers": "maybe",
        "search": "x" * 201,
        "category": "c" * 101,
        "bogus": "1",
        "tag_id": "1",
        "product_id": "2",
    }
    for name, value in cases.items():
        r = await api.get("/api/v1/ideas", params={name: value})
        assert r.status == 400 and r.error["field"] == name, (name, r.json)
    r = await api.get("/api/v1/ideas", params={"limit": 101})
    assert r.status == 400 and r.error["field"] == "limit"


async def test_concurrent_creates_number_uniquely(api: Api) -> None:
    """Concurrent creates get distinct consecutive numbers."""
    rs = await asyncio.gather(
        *(api.post("/api/v1/ideas", json={"title": f"c{k}"}) for k in range(10))
    )
    numbers = sorted(int(r.data["ideaServiceId"].split("-")[1]) for r in rs)
    assert numbers == list(range(1, 11))


async def test_total_over_the_count_bound_is_exact(api: Api) -> None:
    """A filter matching more than the bounded count (1,000) still answers the exact total."""
    for _ in range(11):
        await make(api, 100, category="bulk")
    await make(api, 3, category="other")
    r = await api.get("/api/v1/ideas", params={"category": "bulk", "limit": 5})
    assert r.json["pagination"]["total"] == 1100 and len(r.data) == 5
    r = await api.get("/api/v1/ideas", params={"limit": 1})
    assert r.json["pagination"]["total"] == 1103
    # Concurrent first askers of a count over the bound share one count and all get it exact.
    pages = await asyncio.gather(
        *(api.get("/api/v1/ideas", params={"category": "bulk", "source": "api"}) for _ in range(8))
    )
    assert {p.json["pagination"]["total"] for p in pages} == {1100}


async def test_concurrent_status_moves_keep_counts(api: Api) -> None:
    """Opposite status moves in parallel neither deadlock nor drift the kept totals."""
    ideas = await make(api, 20)
    ids = [i["id"] for i in ideas]
    await api.patch("/api/v1/ideas/batch/status", json={"ids": ids[:10], "status": "planned"})

    async def flip(idea_id: str, status: str) -> int:
        return (await api.patch(f"/api/v1/ideas/{idea_id}", json={"status": status})).status

    for _ in range(3):
        moves = [flip(i, "new") for i in ids[:10]] + [flip(i, "planned") for i in ids[10:]]
        assert set(await asyncio.gather(*moves)) == {200}
        ids = ids[10:] + ids[:10]
    for status in ("new", "planned"):
        r = await api.get("/api/v1/ideas", params={"status": status, "limit": 100})
        assert r.json["pagination"]["total"] == len(r.data) == 10
    assert (await api.get("/api/v1/ideas")).json["pagination"]["total"] == 20
