"""How many exports run at once: a small bound of their own, per process and per workspace.

An export holds a pooled connection and an open transaction for as long as its client reads.
So exports get their own few slots, fewer than the pool's connections, and the reports always
find one: `EXPORT_CONCURRENCY` at once per analytics process (default 2) and
`EXPORT_CONCURRENCY_PER_WORKSPACE` per workspace (default 1), so that one workspace cannot hold
every slot. An export beyond either bound is refused at once, not queued: 503
`service_unavailable` with `Retry-After` (docs/analytics.md).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from prometheus_client import Counter

from libs.common.errors import ServiceUnavailable

RETRY_AFTER_S = 5

REFUSED = Counter("ims_exports_refused_total", "Exports refused for want of a free slot",
                  ["bound"])


class ExportSlots:
    def __init__(self, total: int, per_workspace: int) -> None:
        self.total, self.per_workspace = total, per_workspace
        self.running: dict[uuid.UUID, int] = {}

    @property
    def in_use(self) -> int:
        return sum(self.running.values())

    @contextlib.contextmanager
    def hold(self, workspace_id: uuid.UUID) -> Iterator[None]:
        """One slot for the duration of the block, else `ServiceUnavailable`."""
        mine = self.running.get(workspace_id, 0)
        if mine >= self.per_workspace:
            REFUSED.labels("workspace").inc()
            raise self._refusal(f"This workspace already runs {mine} export(s) at once, the "
                                f"most allowed; retry in {RETRY_AFTER_S} s")
        if self.in_use >= self.total:
            REFUSED.labels("process").inc()
            raise self._refusal(f"Too many exports are running; retry in {RETRY_AFTER_S} s")
        self.running[workspace_id] = mine + 1
        try:
            yield
        finally:
            left = self.running[workspace_id] - 1
            if left:
                self.running[workspace_id] = left
            else:
                del self.running[workspace_id]

    @staticmethod
    def _refusal(message: str) -> ServiceUnavailable:
        return ServiceUnavailable(message, headers={"Retry-After": str(RETRY_AFTER_S)})
