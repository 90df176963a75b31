"""The cost of the gateway's fair shares on the hot path (docs/gateway.md#fair-shares).

Every forwarded request takes a slot and gives it back (`FairShares.acquire`, `release`); on the
hot path a slot is free and the workspace below its share, and that is all it costs: no
future, no timer, nothing the event loop sees. Measured against an empty coroutine call, in a
few rounds.
`python -m bench fair_shares` (prints; writes no results file).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from services.gateway.shares import FairShares

CALLS = 200_000
ROUNDS = 5


async def _nothing() -> None:
    return None


async def main() -> dict[str, Any]:
    shares = FairShares(100, 25, 2.0)
    addr, ws = "http://127.0.0.1:8001", "ws:6f1d0c3e-9a8b-4f7e-8d6c-5b4a39281706"
    added = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(CALLS):
            await shares.acquire(addr, ws, "ideas")
            shares.release(addr, ws)
        with_shares = (time.perf_counter() - t) / CALLS
        t = time.perf_counter()
        for _ in range(CALLS):
            await _nothing()
        empty = (time.perf_counter() - t) / CALLS
        added.append((with_shares - empty) * 1e6)
        print(
            f"acquire + release {with_shares * 1e6:.3f} µs, empty coroutine call"
            f" {empty * 1e6:.3f} µs: {added[-1]:.3f} µs a request",
            flush=True,
        )
    median = statistics.median(added)
    print(f"median added cost a request: {median:.3f} µs", flush=True)
    return {"added_us_median": median, "added_us": added}
