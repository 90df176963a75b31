"""Revenue on ideas: totalCustomerARR follows links and ARR changes within a second, exactly,
whatever the order or repetition of events; the idea filters and sort use it; rebuild repairs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from functools import partial

import psycopg2

from tests.customers.conftest import Tap, idea_arr, link, new_customer, new_idea, poll
from tests.support.api import Api
from tests.support.processes import ROOT, System


async def test_arr_sums_after_links_and_updates(api: Api) -> None:
    """Each link and each ARR change shows in the idea's totalCustomerARR within 1 s."""
    idea = await new_idea(api)
    assert idea["totalCustomerARR"] is None
    a = await new_customer(api, arr=1000.10)
    b = await new_customer(api, arr=2000.20)
    await link(api, idea["id"], a["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 1000.10) == 1000.10
    await link(api, idea["id"], b["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 3000.30) == 3000.30
    await api.patch(f"/api/v1/customers/{a['id']}", json={"arr": 5000})
    assert await poll(lambda: idea_arr(api, idea["id"]), 7000.20) == 7000.20
    await api.patch(f"/api/v1/customers/{b['id']}", json={"arr": None})
    assert await poll(lambda: idea_arr(api, idea["id"]), 5000) == 5000


async def test_many_quick_changes_end_exact(api: Api) -> None:
    """Concurrent links and rapid ARR updates of shared customers leave exact sums."""
    ideas = [await new_idea(api) for _ in range(3)]
    customers = [await new_customer(api, arr=100) for _ in range(4)]
    await asyncio.gather(*(link(api, i["id"], c["id"]) for i in ideas for c in customers))
    for step in range(1, 6):
        await asyncio.gather(
            *(
                api.patch(f"/api/v1/customers/{c['id']}", json={"arr": 100 * step + n})
                for n, c in enumerate(customers)
            )
        )
    expect = sum(500 + n for n in range(4))
    for idea in ideas:
        assert await poll(partial(idea_arr, api, idea["id"]), expect, within=2.0) == expect


async def test_replayed_and_late_events_change_nothing(api: Api, tap: Tap) -> None:
    """The same event twice, and an old state arriving late, leave the numbers right."""
    idea = await new_idea(api)
    c = await new_customer(api, arr=10)
    await link(api, idea["id"], c["id"])
    await api.patch(f"/api/v1/customers/{c['id']}", json={"arr": 20})
    await api.patch(f"/api/v1/customers/{c['id']}", json={"arr": 30})
    assert await poll(lambda: idea_arr(api, idea["id"]), 30) == 30
    mine = lambda t: (
        lambda e: (
            e["type"] == t
            and c["id"]
            in (  # noqa: E731
                e["data"].get("customerId"),
                e["data"].get("customer", {}).get("id"),
            )
        )
    )
    created = await tap.wait_for(mine("customer.created"))
    linked = await tap.wait_for(mine("link.created"))
    await tap.wait_for(lambda e: mine("customer.updated")(e) and e["data"]["customer"]["arr"] == 30)
    updated = [e for e in tap.seen if mine("customer.updated")(e)]
    assert [e["data"]["customer"]["arr"] for e in updated] == [20, 30]
    # The very same events again (same ids), then as a relay replica would re-send them with
    # fresh ids, oldest state last.
    for event in (linked, created, *updated):
        await tap.republish(event)
    for event in (linked, *updated, created):
        await tap.republish({**event, "id": str(uuid.uuid4())})
    second_idea = await new_idea(api)
    await link(api, second_idea["id"], c["id"])  # a marker: processed after the replays
    assert await poll(lambda: idea_arr(api, second_idea["id"]), 30) == 30
    assert await idea_arr(api, idea["id"]) == 30
    r = await api.get(f"/api/v1/ideas/{idea['id']}")
    assert r.data["totalCustomerARR"] == 30


async def test_idea_filters_and_sort_on_revenue(api: Api) -> None:
    """has_customers, min_arr and sort=totalCustomerARR use the projected revenue."""
    rich, poor, none = await new_idea(api), await new_idea(api), await new_idea(api)
    big, small = await new_customer(api, arr=9000), await new_customer(api, arr=10)
    await link(api, rich["id"], big["id"])
    await link(api, poor["id"], small["id"])

    async def ids(**params):  # type: ignore[no-untyped-def]
        r = await api.get("/api/v1/ideas", params=params)
        assert r.status == 200, r.body
        return [i["id"] for i in r.data]

    assert await poll(
        lambda: ids(has_customers=True, sort="totalCustomerARR", order="desc"),
        [rich["id"], poor["id"]],
    ) == [rich["id"], poor["id"]]
    assert await ids(has_customers=False) == [none["id"]]
    assert await ids(min_arr=100) == [rich["id"]]
    assert await ids(sort="totalCustomerARR", order="asc") == [poor["id"], rich["id"], none["id"]]
    await api.patch(f"/api/v1/customers/{small['id']}", json={"arr": 10000})
    assert await poll(lambda: ids(min_arr=9500), [poor["id"]]) == [poor["id"]]


async def test_rebuild_command_repairs(system: System, api: Api, ws) -> None:
    """`ideasctl customers rebuild-projection` recomputes ideas' revenue from customers data."""
    idea = await new_idea(api)
    c = await new_customer(api, arr=1234.5)
    await link(api, idea["id"], c["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 1234.5) == 1234.5
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:  # damage: a lost event and a wrong total
        cur.execute("DELETE FROM ideas.customer_links WHERE workspace_id = %s", (ws.id,))
        cur.execute(
            "UPDATE ideas.ideas SET total_customer_arr = 1, customer_count = 7"
            " WHERE workspace_id = %s",
            (ws.id,),
        )
    conn.close()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.ctl",
            "customers",
            "rebuild-projection",
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
    assert result["links"] == 1 and result["customers"] == 1
    r = await api.get(f"/api/v1/ideas/{idea['id']}")
    assert r.data["totalCustomerARR"] == 1234.5
    r = await api.get("/api/v1/ideas", params={"has_customers": True})
    assert [i["id"] for i in r.data] == [idea["id"]]
