"""A link to the bottom of a long chain of merges writes its own link alone; the chain above is
followed a step at a time from the link's event (docs/customers.md, "Links up a chain of
merges"): one workspace's bursts of such links leave another workspace's reads their speed, and
every idea up the chain still gets every customer, its ARR projected; a step applied again
adds nothing; exactly the customers linked go up (an unlinked pair stays unlinked)."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

import pytest

from tests.support.api import Resp, Workspace
from tests.support.noisy import assert_victim_unharmed, victim_beside_noise

from .conftest import Tap, idea_arr, link, new_customer, new_idea

I = "/api/v1/ideas"
CHAIN = 30  # ideas in the chain


async def until_arr(api: Any, idea_id: str, expect: Any, within: float) -> Any:
    """The idea's totalCustomerARR once it is `expect`, or when `within` seconds passed; asked
    four times a second, which leaves the workspace's rate window to the noise."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = await idea_arr(api, idea_id)
        if value == expect or loop.time() >= deadline:
            return value
        await asyncio.sleep(0.25)


async def merge_chain(api: Any, length: int) -> list[str]:
    """`length` ideas, each merged into the next (the bottom first), and one customer linked to
    the bottom before: once its ARR shows on the top, every merge has been applied."""
    ideas = [(await new_idea(api))["id"] for _ in range(length)]
    first = await new_customer(api, arr=1000)
    await link(api, ideas[0], first["id"])
    for dup, primary in itertools.pairwise(ideas):
        r = await api.post(f"{I}/{dup}/merge", json={"intoId": primary})
        assert r.status == 200, r.body
    assert await until_arr(api, ideas[-1], 1000, within=30) == 1000
    return ideas


async def test_victim_reads_unharmed_beside_links_to_the_bottom_of_a_long_chain(
    new_workspace: Any,
) -> None:
    """Bursts of 60 concurrent links, of different customers, to the bottom of a chain of 30
    merged ideas, from an enterprise workspace; another workspace's GET /customers/{id} keeps
    a p99 under 1 s and never sees a 5xx. (Copied up the chain inside the link call, one
    transaction held a connection and 29 ideas' locks; the reads waited for seconds.) Then
    each link reaches the top of the chain, and the top's totalCustomerARR counts them all."""
    noisy: Workspace = await new_workspace(rate_limit=None)
    victim: Workspace = await new_workspace()
    chain = await merge_chain(noisy.api, CHAIN)
    customers = await asyncio.gather(*(new_customer(noisy.api, arr=1) for _ in range(120)))
    mine = (await new_customer(victim.api, arr=5))["id"]

    async def noise(i: int) -> Resp:
        body = {"customerId": customers[i]["id"]}
        return await noisy.api.post(f"{I}/{chain[0]}/customers", json=body, check=False)

    async def read() -> Resp:
        return await victim.api.get(f"/api/v1/customers/{mine}", check=False)

    report = await victim_beside_noise(noise, read)
    print("DEBUG", report.summary())
    assert_victim_unharmed(report)
    # Links made, or refused by the gateway's share of the workspace (429).
    assert set(report.noise_statuses) <= {200, 429}, report.summary()
    made = report.noise_statuses[200]
    assert made >= 60, report.summary()
    # Every link made its way up: the top idea's revenue counts each new customer.
    assert await until_arr(noisy.api, chain[-1], 1000 + made, within=60) == 1000 + made
    assert await idea_arr(noisy.api, chain[len(chain) // 2]) == 1000 + made


async def test_a_step_up_the_chain_applied_again_adds_nothing(ws: Workspace, tap: Tap) -> None:
    """A `merge.follow` delivered again (a redelivery, a relay replica: a new event id) finds
    nothing missing: no link, no `link.created`, the revenue unchanged."""
    api = ws.api
    a, b, c = [(await new_idea(api))["id"] for _ in range(3)]
    for dup, primary in ((a, b), (b, c)):
        assert (await api.post(f"{I}/{dup}/merge", json={"intoId": primary})).status == 200
    customer = await new_customer(api, arr=7)
    await link(api, a, customer["id"])
    assert await until_arr(api, c, 7, within=10) == 7
    created = await tap.wait_for(
        lambda e: e["type"] == "link.created" and e["data"]["ideaId"] == c, timeout=5
    )
    for idea in (a, b):
        await tap.republish(
            {
                "id": str(uuid.uuid4()),
                "type": "merge.follow",
                "createdAt": created["createdAt"],
                "workspaceId": ws.id,
                "data": {"ideaId": idea},
            }
        )
    seen = {e["id"] for e in tap.seen}  # b's link.created came before c's
    with pytest.raises(AssertionError, match="not seen"):
        await tap.wait_for(
            lambda e: e["type"] == "link.created" and e["id"] not in seen, timeout=1.5
        )
    for idea in (a, b, c):
        linked = (await api.get(f"{I}/{idea}/customers")).data
        assert [x["id"] for x in linked] == [customer["id"]]
        assert await idea_arr(api, idea) == 7


async def test_a_pair_unlinked_from_the_primary_stays_unlinked_when_others_go_up(
    ws: Workspace,
) -> None:
    """Only the customers linked go up a chain: a pair unlinked from a primary is not linked
    there again when another customer's link to the duplicate goes up."""
    api = ws.api
    a, b, c = [(await new_idea(api))["id"] for _ in range(3)]
    for dup, primary in ((a, b), (b, c)):
        assert (await api.post(f"{I}/{dup}/merge", json={"intoId": primary})).status == 200
    first, second = await new_customer(api, arr=1), await new_customer(api, arr=20)
    await link(api, a, first["id"])
    assert await until_arr(api, c, 1, within=10) == 1
    r = await api.delete(f"{I}/{b}/customers/{first['id']}")
    assert r.status == 200, r.body
    assert await until_arr(api, b, None, within=10) is None
    await link(api, a, second["id"])
    assert await until_arr(api, c, 21, within=10) == 21
    assert await until_arr(api, b, 20, within=10) == 20
    linked = (await api.get(f"{I}/{b}/customers")).data
    assert [x["id"] for x in linked] == [second["id"]]
