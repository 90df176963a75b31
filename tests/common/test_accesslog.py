"""The request log's per-second budget: lines of requests that went well are sampled, errors
and slow requests never, and the lines left out are counted on the next line written."""

from __future__ import annotations

import structlog

from libs.common.accesslog import AccessLog


def _lines(log: AccessLog, calls: list[tuple[int, float]]) -> list[dict[str, object]]:
    with structlog.testing.capture_logs() as logs:
        for status, seconds in calls:
            log.request("GET", "/x", status, seconds)
    return [e for e in logs if e["event"] == "request"]


def test_every_line_without_a_budget() -> None:
    assert len(_lines(AccessLog(0, 500), [(200, 0.001)] * 300)) == 300


def test_a_budget_keeps_errors_and_slow_requests_and_counts_the_rest() -> None:
    log = AccessLog(5, 500, clock=lambda: 7.0)  # one second throughout
    calls = [(200, 0.001)] * 20 + [(503, 0.001), (404, 0.001), (200, 0.9), (500, 0.001)]
    lines = _lines(log, calls)
    # The first 5 that went well, then every error and the slow one.
    assert [e["status"] for e in lines] == [200] * 5 + [503, 404, 200, 500]
    assert lines[5]["unlogged"] == 15 and "unlogged" not in lines[6]
    assert lines[7]["duration_ms"] == 900.0
    # Lines written plus lines counted as left out: every request.
    assert len(lines) + sum(int(e.get("unlogged", 0)) for e in lines) == len(calls)  # type: ignore[call-overload]


def test_the_budget_is_per_second() -> None:
    now = [1.0]
    log = AccessLog(2, 500, clock=lambda: now[0])
    first = _lines(log, [(200, 0.001)] * 5)
    now[0] = 2.5
    second = _lines(log, [(200, 0.001)] * 5)
    assert len(first) == 2 and len(second) == 2 and second[0]["unlogged"] == 3
