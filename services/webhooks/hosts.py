"""Per-host and per-workspace bookkeeping of one dispatcher: attempts (and test pings)
running, claimed ones waiting, speed. Hosts are `targets.host_key`s: one per host and port,
however the URL spells the host.

A workspace holds at most `per_workspace` attempts (running, reserved or waiting) at once, so
one workspace's hanging receivers never fill the dispatcher: the others always find slots.
At most `per_host` attempts run per target host. For a host that answers fast, the claim may
also take up to `BUFFER_SHARES * per_host` more, which wait here and start the moment a slot of that host
frees, without a round trip to the database; that keeps a busy receiver's slots full. A waiting
attempt starts only while its lease still covers a whole attempt (else it is left to expire and
is claimed again), so no other replica can take it while it runs. Slow or hanging hosts get no
waiting attempts: their slots free only at the timeout, and the leases would not last.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque

from .store import Claimed

FAST_S = 0.5  # a host whose attempts take less than this (on average) gets a buffer
BUFFER_SHARES = 3  # of `per_host` each: how many claimed attempts of a fast host may wait
LEASE_SAFETY_S = 2.0  # a waiting attempt starts only with this much of its lease to spare
MAX_HOSTS = 10_000


class Hosts:
    def __init__(self, per_host: int, lease_s: float, timeout_s: float, per_workspace: int) -> None:
        self.per_host = per_host
        self.per_workspace = per_workspace
        self.held: dict[str, int] = defaultdict(int)  # per workspace: running, reserved, waiting
        self.inflight: dict[str, int] = defaultdict(int)  # running and reserved
        self.waiting: dict[str, deque[tuple[float, Claimed]]] = {}
        self.n_waiting = 0
        self.speed: dict[str, float] = {}  # moving average of attempt seconds
        self.max_wait_s = lease_s - timeout_s - LEASE_SAFETY_S

    def has_slot(self, host: str) -> bool:
        return self.inflight.get(host, 0) < self.per_host

    def workspace_full(self, workspace: str) -> bool:
        return self.held.get(workspace, 0) >= self.per_workspace

    def hold(self, workspace: str) -> None:
        self.held[workspace] += 1

    def let_go(self, workspace: str) -> None:
        self.held[workspace] -= 1
        if self.held[workspace] <= 0:
            del self.held[workspace]

    def workspaces_wanted(self) -> dict[str, int]:
        """Per workspace with work here: how many more this replica may claim (<= 0: none)."""
        return {w: self.per_workspace - n for w, n in self.held.items()}

    def take(self, host: str) -> None:
        self.inflight[host] += 1

    def give_back(self, host: str) -> None:
        self.inflight[host] -= 1
        if self.inflight[host] <= 0:
            del self.inflight[host]

    def wanted(self) -> dict[str, int]:
        """Per host with work here: how many more this replica may claim (<= 0: none)."""
        hosts = set(self.inflight) | set(self.waiting)
        return {
            h: self._cap(h) - self.inflight.get(h, 0) - len(self.waiting.get(h, ())) for h in hosts
        }

    def fast(self, host: str) -> bool:
        return self.speed.get(host, FAST_S) < FAST_S

    def _cap(self, host: str) -> int:
        if self.fast(host) and self.max_wait_s > 0:
            return self.per_host * (1 + BUFFER_SHARES)
        return self.per_host

    def park(self, job: Claimed) -> None:
        self.waiting.setdefault(job.target_host, deque()).append((time.monotonic(), job))
        self.n_waiting += 1

    def next_waiting(self, host: str) -> Claimed | None:
        """The next waiting attempt of `host` whose lease still covers it, if any."""
        queue = self.waiting.get(host)
        job = None
        while queue and job is None:
            parked_at, candidate = queue.popleft()
            self.n_waiting -= 1
            if time.monotonic() - parked_at < self.max_wait_s:
                job = candidate
            else:  # left for its lease to expire: it is claimed again
                self.let_go(candidate.workspace_id)
        if queue is not None and not queue:
            del self.waiting[host]
        return job

    def all_waiting(self) -> list[Claimed]:
        return [job for queue in self.waiting.values() for _, job in queue]

    def observe(self, host: str, seconds: float) -> None:
        if len(self.speed) >= MAX_HOSTS:
            self.speed.clear()
        old = self.speed.get(host, seconds)
        self.speed[host] = 0.8 * old + 0.2 * seconds
