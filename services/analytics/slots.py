"""How many exports run at once: a small bound of their own, per process and per workspace.

An export holds a pooled connection and an open transaction for as long as its client reads.
So exports get their own few slots, fewer than the pool's connections, and the reports always
find one: `EXPORT_CONCURRENCY` at once per analytics process (default 2) and
`EXPORT_CONCURRENCY_PER_WORKSPACE` per workspace (default 1), so that one workspace cannot hold
every slot. An export beyond either bound is refused at once, not queued, with `Retry-After`
(docs/analytics.md): beyond its workspace's bound, 429 `rate_limited` (the caller's own use, like
the hourly export window); beyond the process's, 503 `service_unavailable` (shared capacity).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from prometheus_client import Counter

from libs.common.errors import RateLimited, ServiceUnavailable

RETRY_AFTER_S = 5

REFUSED = Counter("ims_exports_refused_total", "Exports refused for want of a free slot", ["bound"])


class ExportSlots:
    def __init__(self, total: int, per_workspace: int) -> None:
        self.total, self.per_workspace = total, per_workspace
        self.running: dict[uuid.UUID, int] = {}

    @property
    def in_use(self) -> int:
        return sum(self.running.values())

    @contextlib.contextmanager
    def hold(self, workspace_id: uuid.UUID) -> Iterator[None]:
        """One slot for the duration of the block, else `RateLimited` (the workspace's bound)
        or `ServiceUnavailable` (the process's)."""
        mine = self.running.get(workspace_id, 0)
        if mine >= self.per_workspace:
            REFUSED.labels("workspace").inc()
            raise RateLimited(
                f"This workspace already runs {mine} export(s) at once, the most "
                f"allowed; retry in {RETRY_AFTER_S} s",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
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
