"""A noisy workspace beside a victim: the shape of every fairness test (docs/gateway.md#fair-shares).

The noisy workspace sends at the enterprise plan's rate (1,200 a minute) in bursts of up to 60
concurrent requests, shaped however the test likes; meanwhile the victim workspace sends its own
ordinary requests one after another, and the report holds the victim's latencies and statuses.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .api import Resp

ENTERPRISE_PER_MINUTE = 1200
BURST = 60


@dataclass
class NoiseReport:
    victim_ms: list[float] = field(default_factory=list)
    victim_statuses: Counter[int] = field(default_factory=Counter)
    noise_statuses: Counter[int | str] = field(default_factory=Counter)

    @property
    def victim_worst_ms(self) -> float:
        return max(self.victim_ms)

    @property
    def victim_p99_ms(self) -> float:
        ordered = sorted(self.victim_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]

    def summary(self) -> str:
        return (
            f"victim: {len(self.victim_ms)} requests, p99 {self.victim_p99_ms:.0f} ms, "
            f"worst {self.victim_worst_ms:.0f} ms, statuses {dict(self.victim_statuses)}; "
            f"noise statuses {dict(self.noise_statuses)}"
        )


async def victim_beside_noise(
    noise: Callable[[int], Awaitable[Resp | int]],
    victim: Callable[[], Awaitable[Resp]],
    *,
    bursts: int = 2,
    burst: int = BURST,
    per_minute: int = ENTERPRISE_PER_MINUTE,
    victim_pause_s: float = 0.05,
    settle_s: float = 0.3,
) -> NoiseReport:
    """Send `bursts` bursts of `burst` concurrent `noise(i)` calls, spaced to stay within
    `per_minute` (60 every 3 s at the enterprise rate), while `victim()` runs in a loop; the
    victim starts `settle_s` after the first burst (once the noise holds what it can) and runs
    until the last burst has been answered. A noise call may return a Resp or a status code;
    one that raises is counted by its exception's name."""
    report = NoiseReport()
    spacing = burst * 60 / per_minute

    async def one_noise(i: int) -> None:
        try:
            r = await noise(i)
            report.noise_statuses[r if isinstance(r, int) else r.status] += 1
        except Exception as err:  # a reset or timeout is part of what the noise may cause
            report.noise_statuses[type(err).__name__] += 1

    async def noisy() -> None:
        waves = []
        for b in range(bursts):
            started = time.monotonic()
            waves.append(asyncio.gather(*(one_noise(b * burst + i) for i in range(burst))))
            if b < bursts - 1:
                await asyncio.sleep(max(0.0, spacing - (time.monotonic() - started)))
        await asyncio.gather(*waves)

    async def victim_loop(done: asyncio.Event) -> None:
        await asyncio.sleep(settle_s)
        while not done.is_set():
            t0 = time.perf_counter()
            r = await victim()
            report.victim_ms.append((time.perf_counter() - t0) * 1000)
            report.victim_statuses[r.status] += 1
            await asyncio.sleep(victim_pause_s)

    done = asyncio.Event()
    watcher = asyncio.create_task(victim_loop(done))
    try:
        await noisy()
    finally:
        done.set()
        await watcher
    assert report.victim_ms, "the victim sent nothing while the noise lasted"
    return report


def assert_victim_unharmed(report: NoiseReport, *, p99_ms: float = 1000.0) -> None:
    """The victim never saw a 5xx, and its p99 latency stayed under `p99_ms`."""
    assert not any(s >= 500 for s in report.victim_statuses), report.summary()
    assert report.victim_p99_ms < p99_ms, report.summary()
