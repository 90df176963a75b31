"""End users benchmark: a vote on a user's behalf against the same vote with `voter`.

Starts the whole system on free ports, makes one workspace with 40 customers, 400 users (10 of
each customer) and 200 ideas, then measures through the gateway (127.0.0.1, 8 clients):
- `POST /ideas/{id}/vote` with `userId` (the ideas service checks the user, asking the
  customers service on the user's first vote only, holds the user, writes the vote and
  `vote.changed`; the customers service then keeps the company's link, made and removed as the
  value flips from round to round) against the same vote with `voter`, in alternating rounds of
  one run, so both sides see the same machine; the ratio of their throughputs, with 8 clients
  and with one (the synchronous path alone);
- the time from a user's first +1 on an idea to the idea's `totalCustomerARR` showing the
  user's company (p50/p99 over 200 votes): vote, outbox, relay, `vote.changed`, the settle,
  `link.created`, the projection.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import aiohttp

from bench.common import (
    Client,
    new_workspace,
    pct_ms,
    pooled,
    running_system,
    timed_loop,
    write_results,
)

CUSTOMERS, USERS_EACH, IDEAS = 40, 10, 200
ROUNDS, SECONDS, CLIENTS = 3, 6.0, 8


async def make_data(c: Client) -> tuple[list[str], list[str], list[int]]:
    """Ideas, users, and each user's customer's index (its ARR is index + 1)."""
    customers = [
        (await c.call("POST", "/api/v1/customers", json={"name": f"Co {n}", "arr": n + 1}))["data"][
            "id"
        ]
        for n in range(CUSTOMERS)
    ]
    users, of = [], []
    for n, customer in enumerate(customers):
        for k in range(USERS_EACH):
            body = {"name": f"U {n}-{k}", "customerId": customer}
            users.append((await c.call("POST", "/api/v1/users", json=body))["data"]["id"])
            of.append(n)
    ideas = [
        (await c.call("POST", "/api/v1/ideas", json={"title": f"Idea {n}"}))["data"]["id"]
        for n in range(IDEAS)
    ]
    return ideas, users, of


async def vote_rounds(
    c: Client, ideas: list[str], users: list[str], clients: int = CLIENTS, offset: int = 0
) -> dict[str, Any]:
    """Alternating rounds: votes with `voter`, then the same votes with `userId`. Each call
    is a new (idea, voter) pair, the value alternating, so every call writes a vote."""
    sides: dict[str, list[dict[str, Any]]] = {"voter": [], "userId": []}
    for r in range(offset, offset + ROUNDS):
        for side in ("voter", "userId"):

            async def one(i: int, side: str = side, r: int = r) -> None:
                idea = ideas[i % len(ideas)]
                who = users[(i // len(ideas)) % len(users)]
                body: dict[str, Any] = {"value": 1 if (i // len(ideas) + r) % 2 else -1}
                body[side] = who if side == "userId" else f"bench-{who}"
                await c.call("POST", f"/api/v1/ideas/{idea}/vote", json=body)

            sides[side].append(
                await timed_loop(one, clients=clients, seconds=SECONDS, cap=10**6, raw=True)
            )
    voter, user = pooled(sides["voter"]), pooled(sides["userId"])
    return {
        "with_voter": voter,
        "with_userId": user,
        "throughput_ratio_userId_to_voter": round(user["rps"] / voter["rps"], 3),
        "rounds": ROUNDS,
        "seconds_per_round": SECONDS,
        "clients": clients,
    }


async def demand_latency(
    c: Client, ideas: list[str], users: list[str], of: list[int], votes: int = 200
) -> dict[str, Any]:
    """From a user's +1 on a fresh idea to the idea's totalCustomerARR showing the company."""
    samples: list[float] = []
    for n in range(votes):
        idea = (await c.call("POST", "/api/v1/ideas", json={"title": f"Probe {n}"}))["data"]["id"]
        user = users[(n * 7) % len(users)]
        want = of[(n * 7) % len(users)] + 1
        t0 = time.perf_counter()
        await c.call("POST", f"/api/v1/ideas/{idea}/vote", json={"userId": user})
        while True:
            got = (await c.call("GET", f"/api/v1/ideas/{idea}"))["data"]["totalCustomerARR"]
            if got == want:
                break
            if time.perf_counter() - t0 > 5:
                raise RuntimeError(f"vote {n}: the company's ARR not on the idea after 5 s")
        samples.append(time.perf_counter() - t0)
    return {
        "votes": len(samples),
        "p50_ms": pct_ms(samples, 0.5),
        "p99_ms": pct_ms(samples, 0.99),
        "max_ms": round(max(samples) * 1000, 2),
    }


def markdown(res: dict[str, Any]) -> str:
    v, u, d = res["votes"]["with_voter"], res["votes"]["with_userId"], res["demand"]
    o = res["votes_one_client"]
    return "\n".join(
        [
            "# End users benchmark",
            "",
            f"One workspace: {CUSTOMERS} customers, {CUSTOMERS * USERS_EACH} users, {IDEAS} "
            f"ideas; through the gateway on 127.0.0.1, {CLIENTS} clients; {ROUNDS} alternating "
            f"rounds of {SECONDS:g} s per side in one run; 2-core machine.",
            "",
            "| POST /ideas/{id}/vote | Requests | Throughput (req/s) | p50 (ms) | p99 (ms) |",
            "|---|---|---|---|---|",
            f"| with `voter` | {v['requests']} | {v['rps']} | {v['p50_ms']} | {v['p99_ms']} |",
            f"| with `userId` (company link kept) | {u['requests']} | {u['rps']} | {u['p50_ms']} "
            f"| {u['p99_ms']} |",
            "",
            f"Throughput ratio userId / voter: **{res['votes']['throughput_ratio_userId_to_voter']}**"
            f" (per-round p50/p99 with voter {v['p50_p99_ms_per_run']}, with userId "
            f"{u['p50_p99_ms_per_run']}).",
            "",
            f"One client (the synchronous path alone): with `voter` p50 {o['with_voter']['p50_ms']}"
            f" ms ({o['with_voter']['rps']} req/s), with `userId` p50 "
            f"{o['with_userId']['p50_ms']} ms ({o['with_userId']['rps']} req/s), ratio "
            f"{o['throughput_ratio_userId_to_voter']}.",
            "",
            f"A user's +1 -> the company's ARR in the idea's totalCustomerARR: p50 {d['p50_ms']} ms,"
            f" p99 {d['p99_ms']} ms, max {d['max_ms']} ms over {d['votes']} votes (vote, outbox, "
            "relay, vote.changed, settle, link.created, projection, and the polling reads).",
            "",
            f"Load average (1 min) at the end of the run: {res['load_average_1m']} on 2 cores.",
            "",
        ]
    )


async def main() -> dict[str, Any]:
    async with running_system() as system:
        ws = new_workspace(system)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:
            c = Client(session, system.base_url, ws["key"], ok=(200,))
            ideas, users, of = await make_data(c)
            votes = await vote_rounds(c, ideas, users)
            # One client: the synchronous path's cost alone (the queued work keeps up).
            sequential = await vote_rounds(c, ideas, users, clients=1, offset=ROUNDS)
            demand = await demand_latency(c, ideas, users, of)
    results = {
        "votes": votes,
        "votes_one_client": sequential,
        "demand": demand,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    for side in ("with_voter", "with_userId"):
        results["votes"][side].pop("latencies_ms", None)
    write_results("users", results, markdown(results))
    print(json.dumps(results, indent=2))
    return results
