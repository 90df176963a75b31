"""The gateway's turns for low-priority requests (services/gateway/priority.py,
docs/gateway.md#priorities), on the class itself: the line they wait in. Through the gateway,
tests/ideas/test_similar.py covers the waits and their metric."""

from __future__ import annotations

import asyncio

from services.gateway.priority import Priorities


async def low(p: Priorities, name: str, seen: list[str], hold_s: float = 0.01) -> None:
    async with p.low():
        seen.append(f"{name} in")
        await asyncio.sleep(hold_s)
        seen.append(f"{name} out")


async def test_waiting_requests_go_first_come_first_and_one_at_a_time() -> None:
    """Three similar queries that arrive while another request is in flight go when it has
    ended, in the order they came, each after the one before has answered."""
    p = Priorities(max_wait_s=5.0, quiet_s=0.0)
    seen: list[str] = []
    with p.normal():
        waiting = []
        for name in "abc":
            waiting.append(asyncio.create_task(low(p, name, seen)))
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)
        assert seen == [], "the other request was still in flight"
        assert [w.done() for w in p._line] == [True, False, False], "only the head watches"
    await asyncio.wait_for(asyncio.gather(*waiting), 2.0)
    assert seen == ["a in", "a out", "b in", "b out", "c in", "c out"]
    assert not p._line


async def test_a_request_whose_wait_ran_out_leaves_the_line() -> None:
    """Requests whose wait runs out go without their turn and leave the line, so that the
    gateway, once quiet, sends the next one at once rather than behind requests long gone; a
    request whose client went away leaves it too, and the one behind it heads the line."""
    p = Priorities(max_wait_s=0.05, quiet_s=0.0)
    seen: list[str] = []
    with p.normal():
        capped = [asyncio.create_task(low(p, name, seen, 0.0)) for name in "ab"]
        await asyncio.wait_for(asyncio.gather(*capped), 1.0)
        assert sorted(seen) == ["a in", "a out", "b in", "b out"], "both went, capped"
        assert not p._line

        p.max_wait_s = 5.0
        gone = asyncio.create_task(low(p, "gone", seen))
        await asyncio.sleep(0.01)
        behind = asyncio.create_task(low(p, "behind", seen))
        await asyncio.sleep(0.01)
        gone.cancel()
        await asyncio.sleep(0.01)
        assert len(p._line) == 1 and p._line[0].done(), "the one behind heads the line"
    await asyncio.sleep(0.2)  # the load of the request in flight decays
    await asyncio.wait_for(behind, 1.0)
    assert seen[-2:] == ["behind in", "behind out"]
    assert not p._line

    seen.clear()
    await asyncio.wait_for(low(p, "next", seen), 0.05)  # at once: nobody left ahead of it
    assert seen == ["next in", "next out"]
