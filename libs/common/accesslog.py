"""The request log line of every process, with a per-second budget for the lines of requests
that went well.

`ACCESS_LOG_PER_S` (default 100; 0 logs every request): at most that many lines a second per
process for requests answered under 400 and faster than `ACCESS_LOG_SLOW_MS` (default 500).
Every error (status 400 and up) and every slow request is always logged. When lines were left
out, the next line written carries `unlogged`: how many were left out since the line before it,
so the log still adds up to every request; `/metrics` counts every request whatever the budget.

Why: under load, rendering and writing one JSON line per request cost a sixth of a service's
CPU (docs/performance.md); past 100 a second, the lines of requests that went well say little
that the metrics do not.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("http")


class AccessLog:
    def __init__(
        self, per_s: int, slow_ms: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_s, self.slow_ms, self.clock = per_s, slow_ms, clock
        self._second = 0
        self._used = 0
        self._unlogged = 0

    def request(self, method: str, path: str, status: int, elapsed_s: float) -> None:
        ms = round(elapsed_s * 1000, 2)
        if self.per_s > 0 and status < 400 and ms < self.slow_ms:
            now = int(self.clock())
            if now != self._second:
                self._second, self._used = now, 0
            if self._used >= self.per_s:
                self._unlogged += 1
                return
            self._used += 1
        if self._unlogged:
            log.info(
                "request",
                method=method,
                path=path,
                status=status,
                duration_ms=ms,
                unlogged=self._unlogged,
            )
            self._unlogged = 0
        else:
            log.info("request", method=method, path=path, status=status, duration_ms=ms)


def _number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        return max(0.0, float(raw)) if raw else default
    except ValueError:
        return default


_LOG: AccessLog | None = None


def access_log() -> AccessLog:
    """The process's request log, configured from the environment on first use."""
    global _LOG
    if _LOG is None:
        _LOG = AccessLog(int(_number("ACCESS_LOG_PER_S", 100)), _number("ACCESS_LOG_SLOW_MS", 500))
    return _LOG
