"""Reading the processes' Prometheus metrics."""

from __future__ import annotations

import re
from typing import Any

from tests.support.processes import SERVICES


async def every_process_metric(system: Any, http: Any, name: str) -> dict[str, float | None]:
    """The value of the unlabelled sample `name` on the metrics of every process of the
    system, by `service/replica` (None where the process does not report it)."""
    out: dict[str, float | None] = {}
    for svc in SERVICES:
        for i in range(len(system.ports[svc])):
            async with http.get(system.metrics_url(svc, i) + "/metrics") as r:
                assert r.status == 200, svc
                text = await r.text()
            found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
            out[f"{svc}/{i}"] = float(found.group(1)) if found else None
    return out
