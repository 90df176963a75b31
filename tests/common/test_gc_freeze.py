"""Every process keeps what it allocated to start out of the cyclic collector's scans
(docs/performance.md#garbage-collection)."""

from __future__ import annotations

from typing import Any

from tests.support.metrics import every_process_metric


async def test_every_process_freezes_its_start_up_objects(system: Any, http: Any) -> None:
    """`ims_gc_frozen_objects` on each process's metrics: the tens of thousands of objects of
    its modules, app and pools, which a full collection would otherwise walk each time."""
    frozen = await every_process_metric(system, http, "ims_gc_frozen_objects")
    for process, count in frozen.items():
        assert count is not None, f"{process} does not say what it froze"
        assert count > 10_000, (process, count)
