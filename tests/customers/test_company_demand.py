"""A company's demand, through the gateway: while a user of a customer votes +1
on an idea, the customer is linked to it and its ARR is in `totalCustomerARR` within a second;
exact under concurrent votes and unvotes of two users of one company, a direct link survives,
a link the votes hold becomes direct by POST, a user moved to another customer moves the
demand, merges carry it with the votes, and late or repeated events change nothing."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aio_pika
import pytest

from tests.customers.conftest import Tap, idea_arr, link, new_customer, new_idea, poll
from tests.customers.test_users import new_user
from tests.support.api import Api
from tests.support.processes import AMQP_URL, System


async def vote(api: Api, idea_id: str, user_id: str, value: int = 1) -> None:
    r = await api.post(f"/api/v1/ideas/{idea_id}/vote", json={"userId": user_id, "value": value})
    assert r.status == 200, r.body


async def unvote(api: Api, idea_id: str, user_id: str) -> None:
    r = await api.delete(f"/api/v1/ideas/{idea_id}/vote", params={"userId": user_id})
    assert r.status == 200, r.body


async def linked(api: Api, idea_id: str) -> list[str]:
    r = await api.get(f"/api/v1/ideas/{idea_id}/customers")
    assert r.status == 200, r.body
    return sorted(c["id"] for c in r.data)


@pytest.fixture
async def votes_tap(system: System) -> AsyncIterator[Tap]:
    """The ideas service's vote.changed and the links it leads to."""
    conn = await aio_pika.connect(AMQP_URL)
    try:
        ch = await conn.channel()
        exchange = await ch.get_exchange(f"{system.amqp_prefix}.events")
        queue = await ch.declare_queue("", exclusive=True, auto_delete=True)
        for key in ("vote.changed", "link.*"):
            await queue.bind(exchange, routing_key=key)
        yield Tap(queue, exchange)
    finally:
        await conn.close()


async def test_a_users_upvote_links_their_customer(api: Api) -> None:
    """+1: linked, ARR within 1 s; -1: not linked; the vote removed: the link goes."""
    acme = await new_customer(api, arr=1000)
    user = await new_user(api, customerId=acme["id"])
    idea, other = await new_idea(api), await new_idea(api)
    await vote(api, idea["id"], user["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 1000) == 1000
    assert await linked(api, idea["id"]) == [acme["id"]]
    assert (await api.get(f"/api/v1/customers/{acme['id']}")).data["ideaCount"] == 1
    await vote(api, other["id"], user["id"], -1)
    await vote(api, idea["id"], user["id"], -1)  # replaced by a -1: no demand any more
    assert await poll(lambda: idea_arr(api, idea["id"]), None) is None
    assert await linked(api, idea["id"]) == [] and await linked(api, other["id"]) == []
    await vote(api, idea["id"], user["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 1000) == 1000
    await unvote(api, idea["id"], user["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), None) is None
    listed = await api.get("/api/v1/ideas", params={"has_customers": "false"})
    assert idea["id"] in [i["id"] for i in listed.data]


async def test_the_link_stays_until_the_last_user_of_the_company_goes(api: Api) -> None:
    """Two users of one company: the link stays while either votes +1, and goes with the last;
    a user without a customer, or of another company, changes nothing of it."""
    acme, globex = await new_customer(api, arr=700), await new_customer(api, arr=5)
    a, b = [await new_user(api, customerId=acme["id"]) for _ in range(2)]
    loner, rival = await new_user(api), await new_user(api, customerId=globex["id"])
    idea = await new_idea(api)
    await asyncio.gather(vote(api, idea["id"], a["id"]), vote(api, idea["id"], b["id"]))
    await vote(api, idea["id"], loner["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 700) == 700
    await unvote(api, idea["id"], a["id"])
    await vote(api, idea["id"], rival["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 705) == 705
    assert await linked(api, idea["id"]) == sorted([acme["id"], globex["id"]])
    await asyncio.gather(unvote(api, idea["id"], b["id"]), unvote(api, idea["id"], rival["id"]))
    assert await poll(lambda: idea_arr(api, idea["id"]), None) is None
    assert await linked(api, idea["id"]) == []


async def test_concurrent_votes_and_unvotes_of_two_users_end_exact(api: Api) -> None:
    """Rounds of concurrent votes, unvotes and -1s of two users of one company on one idea:
    after each round the company is linked exactly when one of them votes +1 now."""
    acme = await new_customer(api, arr=300)
    a, b = [await new_user(api, customerId=acme["id"]) for _ in range(2)]
    idea = await new_idea(api)
    rng = random.Random(17)
    state = {a["id"]: 0, b["id"]: 0}

    async def act(user_id: str, value: int) -> None:
        if value == 0:
            r = await api.delete(f"/api/v1/ideas/{idea['id']}/vote", params={"userId": user_id})
            assert r.status in (200, 404), r.body
        else:
            await vote(api, idea["id"], user_id, value)

    for _ in range(8):
        ops = [(u, rng.choice([1, 1, 0, -1])) for u in (a["id"], b["id"]) for _ in range(3)]
        rng.shuffle(ops)

        # each user's last op is what stands: one user's ops run in order, the two in parallel
        async def run(user_id: str, ops: list[tuple[str, int]] = ops) -> None:
            for u, value in ops:
                if u == user_id:
                    await act(u, value)
                    state[u] = value

        await asyncio.gather(run(a["id"]), run(b["id"]))
        # the end state may equal the one before the round: give the events their second
        await asyncio.sleep(1.0)
        want = 300 if 1 in state.values() else None
        assert await idea_arr(api, idea["id"]) == want, state
        assert await linked(api, idea["id"]) == ([acme["id"]] if want else []), state


async def test_a_direct_link_survives_the_votes(api: Api) -> None:
    """A customer linked directly stays linked when its users' votes come and go."""
    acme = await new_customer(api, arr=40)
    user = await new_user(api, customerId=acme["id"])
    idea = await new_idea(api)
    direct = await link(api, idea["id"], acme["id"])
    await vote(api, idea["id"], user["id"])
    await unvote(api, idea["id"], user["id"])
    await asyncio.sleep(0.3)  # the vote's events are through
    assert await linked(api, idea["id"]) == [acme["id"]]
    assert await poll(lambda: idea_arr(api, idea["id"]), 40) == 40
    r = await api.get(f"/api/v1/ideas/{idea['id']}/customers")
    assert r.data[0]["linkedAt"] == direct["linkedAt"]


async def test_post_on_a_link_the_votes_hold_makes_it_direct(api: Api) -> None:
    """POST /ideas/{id}/customers for a pair only votes link: 200 (its linkedAt), then direct:
    a second POST is 409 and the link stays when the votes go."""
    acme = await new_customer(api, arr=9)
    user = await new_user(api, customerId=acme["id"])
    idea = await new_idea(api)
    await vote(api, idea["id"], user["id"])
    held = await poll(lambda: linked(api, idea["id"]), [acme["id"]])
    assert held == [acme["id"]]
    linked_at = (await api.get(f"/api/v1/ideas/{idea['id']}/customers")).data[0]["linkedAt"]
    r = await api.post(f"/api/v1/ideas/{idea['id']}/customers", json={"customerId": acme["id"]})
    assert r.status == 200, r.body
    assert r.data == {"ideaId": idea["id"], "customerId": acme["id"], "linkedAt": linked_at}
    r = await api.post(f"/api/v1/ideas/{idea['id']}/customers", json={"customerId": acme["id"]})
    assert r.status == 409 and r.error["code"] == "conflict"
    await unvote(api, idea["id"], user["id"])
    await asyncio.sleep(0.3)
    assert await linked(api, idea["id"]) == [acme["id"]]
    assert await idea_arr(api, idea["id"]) == 9


async def test_unlinking_what_votes_hold(api: Api) -> None:
    """DELETE of a link only votes hold: 409, it stays. Of a direct link the votes also hold:
    200, the votes keep it until they go."""
    acme = await new_customer(api, arr=12)
    user = await new_user(api, customerId=acme["id"])
    idea = await new_idea(api)
    path = f"/api/v1/ideas/{idea['id']}/customers/{acme['id']}"
    await vote(api, idea["id"], user["id"])
    assert await poll(lambda: linked(api, idea["id"]), [acme["id"]]) == [acme["id"]]
    r = await api.delete(path)
    assert r.status == 409 and r.error["code"] == "conflict", r.body
    await link(api, idea["id"], acme["id"])
    r = await api.delete(path)
    assert r.status == 200, r.body
    assert await linked(api, idea["id"]) == [acme["id"]]
    await unvote(api, idea["id"], user["id"])
    assert await poll(lambda: linked(api, idea["id"]), []) == []
    assert await poll(lambda: idea_arr(api, idea["id"]), None) is None


async def test_a_user_moved_to_another_customer_moves_the_demand(api: Api) -> None:
    """PATCH customerId: the old company's links only this user held go, the new one's come;
    another user of the old company keeps its link where that user votes; to null: none."""
    acme, globex = await new_customer(api, arr=100), await new_customer(api, arr=20)
    mover, stayer = (
        await new_user(api, customerId=acme["id"]),
        await new_user(api, customerId=acme["id"]),
    )
    one, two = await new_idea(api), await new_idea(api)
    await vote(api, one["id"], mover["id"])
    await vote(api, two["id"], mover["id"])
    await vote(api, two["id"], stayer["id"])
    assert await poll(lambda: idea_arr(api, one["id"]), 100) == 100
    assert await poll(lambda: idea_arr(api, two["id"]), 100) == 100
    r = await api.patch(f"/api/v1/users/{mover['id']}", json={"customerId": globex["id"]})
    assert r.status == 200 and r.data["voteCount"] == 2, r.body
    assert await poll(lambda: idea_arr(api, one["id"]), 20) == 20
    assert await poll(lambda: idea_arr(api, two["id"]), 120) == 120
    assert await linked(api, one["id"]) == [globex["id"]]
    # an identify that applies a customerId moves the user as a PATCH does
    assert (
        await api.patch(f"/api/v1/users/{mover['id']}", json={"externalId": "m-1"})
    ).status == 200
    r = await api.post("/api/v1/users/identify", json={"externalId": "m-1", "customerId": None})
    assert r.status == 200 and r.data["id"] == mover["id"] and r.data["customerId"] is None
    assert await poll(lambda: idea_arr(api, one["id"]), None) is None
    assert await poll(lambda: idea_arr(api, two["id"]), 100) == 100
    assert await linked(api, two["id"]) == [acme["id"]]


async def test_a_merge_carries_the_demand_with_the_votes(api: Api) -> None:
    """A user's vote on a duplicate moves to the primary with the merge, and so does the
    company's link; the unmerge brings both back; a direct link of the duplicate is copied as
    the merge's (docs/customers.md)."""
    acme, globex = await new_customer(api, arr=50), await new_customer(api, arr=3)
    user = await new_user(api, customerId=acme["id"])
    dup, primary = await new_idea(api), await new_idea(api)
    await vote(api, dup["id"], user["id"])
    await link(api, dup["id"], globex["id"])
    assert await poll(lambda: idea_arr(api, dup["id"]), 53) == 53
    r = await api.post(f"/api/v1/ideas/{dup['id']}/merge", json={"intoId": primary["id"]})
    assert r.status == 200, r.body
    assert await poll(lambda: idea_arr(api, primary["id"]), 53) == 53
    assert await poll(lambda: idea_arr(api, dup["id"]), 3) == 3
    assert await linked(api, dup["id"]) == [globex["id"]]
    r = await api.post(f"/api/v1/ideas/{dup['id']}/unmerge")
    assert r.status == 200, r.body
    assert await poll(lambda: idea_arr(api, primary["id"]), None) is None
    assert await poll(lambda: idea_arr(api, dup["id"]), 53) == 53


async def test_late_and_repeated_vote_events_change_nothing(api: Api, votes_tap: Tap) -> None:
    """vote.changed delivered again, or an older one arriving after a newer (new event ids),
    leaves the link as the latest vote has it."""
    acme = await new_customer(api, arr=77)
    user = await new_user(api, customerId=acme["id"])
    idea = await new_idea(api)
    await vote(api, idea["id"], user["id"])
    up = await votes_tap.wait_for(
        lambda e: e["type"] == "vote.changed" and e["data"]["ideaId"] == idea["id"]
    )
    assert up["data"]["userId"] == user["id"] and up["data"]["value"] == 1
    assert await poll(lambda: idea_arr(api, idea["id"]), 77) == 77
    await unvote(api, idea["id"], user["id"])
    down = await votes_tap.wait_for(
        lambda e: e["type"] == "vote.changed" and e["data"]["value"] == 0
    )
    assert down["data"]["version"] > up["data"]["version"]
    assert await poll(lambda: idea_arr(api, idea["id"]), None) is None
    await votes_tap.republish(up)
    await votes_tap.republish({**up, "id": str(uuid.uuid4())})
    assert await poll(lambda: idea_arr(api, idea["id"]), 77, within=1.0) is None
    await votes_tap.republish({**down, "id": str(uuid.uuid4())})
    await vote(api, idea["id"], user["id"])
    assert await poll(lambda: idea_arr(api, idea["id"]), 77) == 77
    await votes_tap.republish({**down, "id": str(uuid.uuid4())})
    assert await poll(lambda: idea_arr(api, idea["id"]), None, within=1.0) == 77


async def test_demand_stays_in_its_workspace(api: Api, new_workspace: Any) -> None:
    """Another workspace's votes and customers never reach this workspace's ideas."""
    other = await new_workspace()
    theirs = await new_customer(other.api, arr=1)
    their_user = await new_user(other.api, customerId=theirs["id"])
    their_idea, mine = await new_idea(other.api), await new_idea(api)
    await vote(other.api, their_idea["id"], their_user["id"])
    r = await api.post(f"/api/v1/ideas/{mine['id']}/vote", json={"userId": their_user["id"]})
    assert r.status == 404
    assert await poll(lambda: idea_arr(other.api, their_idea["id"]), 1) == 1
    assert await linked(api, mine["id"]) == [] and await idea_arr(api, mine["id"]) is None
