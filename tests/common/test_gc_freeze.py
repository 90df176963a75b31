"""Every process keeps what it allocated to start out of the cyclic collector's scans
(docs/performance.md#garbage-collection)."""

from __future__ import annotations

import re
from typing import Any

from tests.support.processes import SERVICES


async def test_every_process_freezes_its_start_up_objects(system: Any, http: Any) -> None:
    """`ims_gc_frozen_objects` on each process's metrics: the tens of thousands of objects of
    its modules, app and pools, which a full collection would otherwise walk each time."""
    for svc in SERVICES:
        for i in range(len(system.ports[svc])):
            async with http.get(system.metrics_url(svc, i) + "/metrics") as r:
                assert r.status == 200, svc
                text = await r.text()
            found = re.search(r"^ims_gc_frozen_objects (\S+)$", text, re.MULTILINE)
            assert found is not None, f"{svc} does not say what it froze"
            assert float(found.group(1)) > 10_000, (svc, found.group(1))
