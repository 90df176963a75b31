"""The customers list: total, sorts with nulls last, keyset pages, search and filters."""

from __future__ import annotations

from typing import Any

from tests.customers.conftest import new_customer
from tests.support.api import Api


async def all_pages(api: Api, **params: Any) -> tuple[list[dict[str, Any]], set[int]]:
    out, totals, cursor = [], set(), None
    for _ in range(50):
        r = await api.get("/api/v1/customers", params={**params, "cursor": cursor})
        assert r.status == 200, r.body
        out += r.data
        totals.add(r.json["pagination"]["total"])
        cursor = r.json["pagination"]["nextCursor"]
        assert r.json["pagination"]["hasMore"] == (cursor is not None)
        if cursor is None:
            return out, totals
    raise AssertionError("too many pages")


async def test_sorts_and_pages(api: Api) -> None:
    """Every sort and order pages through all customers once, by key then id, nulls last."""
    arrs = [300, None, 100, 300, None, 200, 50.5]
    made = [await new_customer(api, name=f"{chr(70 - i)}-cust", arr=a) for i, a in enumerate(arrs)]
    for sort, key in (("createdAt", "createdAt"), ("arr", "arr"), ("name", "name")):
        for order in ("asc", "desc"):
            got, totals = await all_pages(api, sort=sort, order=order, limit=2)
            assert totals == {len(made)}
            assert sorted(c["id"] for c in got) == sorted(c["id"] for c in made)
            present = [c for c in made if c[key] is not None]
            expect = sorted(present, key=lambda c: (c[key], c["id"]), reverse=order == "desc")
            nulls = sorted(
                (c for c in made if c[key] is None), key=lambda c: c["id"], reverse=order == "desc"
            )
            assert [c["id"] for c in got] == [c["id"] for c in expect + nulls], (sort, order)


async def test_default_is_newest_first(api: Api) -> None:
    a = await new_customer(api)
    b = await new_customer(api)
    r = await api.get("/api/v1/customers")
    assert [c["id"] for c in r.data] == [b["id"], a["id"]]
    assert r.json["pagination"] == {"limit": 25, "hasMore": False, "nextCursor": None, "total": 2}


async def test_search_matches_name_email_domain(api: Api) -> None:
    """search is a case-insensitive substring of name, e-mail or domain."""
    a = await new_customer(api, name="Globex Corp")
    b = await new_customer(api, name="Other", email="Buyer@GLOBEX.com")
    c = await new_customer(api, name="Third", domain="my-globex.net")
    await new_customer(api, name="Initech", email="x@initech.io", domain="initech.io")
    await new_customer(api, name="Glo bex")
    r = await api.get(
        "/api/v1/customers", params={"search": "gLoBeX", "sort": "name", "order": "asc"}
    )
    assert {x["id"] for x in r.data} == {a["id"], b["id"], c["id"]}
    assert r.json["pagination"]["total"] == 3
    r = await api.get("/api/v1/customers", params={"search": "100%_"})
    assert r.data == [] and r.json["pagination"]["total"] == 0


async def test_filters(api: Api) -> None:
    """min_arr, plan and source filter; total counts what matches."""
    big = await new_customer(api, arr=1000, plan="pro")
    mid = await new_customer(api, arr=500, plan="pro")
    await new_customer(api, arr=499.99, plan="starter")
    await new_customer(api, plan="pro")
    r = await api.get("/api/v1/customers", params={"min_arr": 500})
    assert {x["id"] for x in r.data} == {big["id"], mid["id"]}
    r = await api.get("/api/v1/customers", params={"min_arr": 500, "plan": "pro", "source": "api"})
    assert r.json["pagination"]["total"] == 2
    r = await api.get("/api/v1/customers", params={"source": "salesforce"})
    assert r.json["pagination"]["total"] == 0


async def test_bad_query_and_foreign_cursor(api: Api) -> None:
    """Bad parameters and a cursor of another sort or forged answer 400 naming the parameter."""
    for params, field in (
        ({"sort": "email"}, "sort"),
        ({"order": "up"}, "order"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"min_arr": "lots"}, "min_arr"),
        ({"search": "x" * 201}, "search"),
        ({"cursor": "garbage"}, "cursor"),
        ({"colour": "red"}, "colour"),
    ):
        r = await api.get("/api/v1/customers", params=params)
        assert r.status == 400 and r.error["field"] == field, (params, r.body)
    for _ in range(3):
        await new_customer(api, arr=1)
    cursor = (await api.get("/api/v1/customers", params={"limit": 1})).json["pagination"][
        "nextCursor"
    ]
    r = await api.get("/api/v1/customers", params={"limit": 1, "sort": "arr", "cursor": cursor})
    assert r.status == 400 and r.error["field"] == "cursor"


async def test_list_is_workspace_scoped(api: Api, new_workspace) -> None:
    other = await new_workspace()
    await new_customer(other.api)
    r = await api.get("/api/v1/customers")
    assert r.data == [] and r.json["pagination"]["total"] == 0
