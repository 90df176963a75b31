"""Every process measures how late its event loop runs (docs/running.md#event-loop-lag)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from structlog.testing import capture_logs

from libs.common.web.serving import LOOP_LAG, watch_loop
from tests.support.metrics import every_process_metric


def _count_at_least(bound: str) -> float:
    """How many observations of `ims_event_loop_lag_seconds` were above the bucket `bound`."""
    total = above = 0.0
    for metric in LOOP_LAG.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count"):
                total = sample.value
            elif sample.name.endswith("_bucket") and sample.labels["le"] == bound:
                above = sample.value
    return total - above


async def test_a_blocked_loop_is_measured_and_logged() -> None:
    before = _count_at_least("0.025")
    watch = asyncio.create_task(watch_loop(blocked_log_s=0.04, every_s=0.01))
    await asyncio.sleep(0.05)  # the watch is waiting on its timer
    with capture_logs() as logs:
        time.sleep(0.08)  # the loop runs nothing else meanwhile
        await asyncio.sleep(0.05)
    watch.cancel()
    blocked = [e for e in logs if e["event"] == "event_loop_blocked"]
    assert len(blocked) == 1, logs
    assert 60 <= blocked[0]["blocked_ms"] < 1000, blocked
    assert _count_at_least("0.025") == before + 1


async def test_an_idle_loop_logs_nothing() -> None:
    watch = asyncio.create_task(watch_loop(blocked_log_s=0.25, every_s=0.01))
    with capture_logs() as logs:
        await asyncio.sleep(0.2)
    watch.cancel()
    assert [e for e in logs if e["event"] == "event_loop_blocked"] == []


async def test_every_process_reports_its_loop_lag(system: Any, http: Any) -> None:
    """`ims_event_loop_lag_seconds` on each process's metrics, with the watch's observations."""
    await asyncio.sleep(0.2)  # a few of the watch's turns, whatever the processes' age
    counts = await every_process_metric(system, http, "ims_event_loop_lag_seconds_count")
    for process, count in counts.items():
        assert count is not None, f"{process} does not report its loop lag"
        assert count >= 2, (process, count)
