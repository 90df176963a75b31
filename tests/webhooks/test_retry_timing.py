"""Retry timing: a little jitter on the schedule, and a receiver's Retry-After honoured."""

from __future__ import annotations

import time
from email.utils import formatdate

from services.webhooks.dispatcher import JITTER, RETRY_AFTER_CAP_S, retry_delay
from services.webhooks.sender import retry_after
from tests.support.api import Workspace
from tests.support.processes import System
from tests.webhooks.support import Receiver, publish
from tests.webhooks.test_delivery import deliveries_when, event_data, subscribe


def test_retry_after_header_forms() -> None:
    now = time.time()
    assert retry_after("3", now) == 3.0
    assert retry_after(" 120 ", now) == 120.0
    in_a_minute = retry_after(formatdate(now + 60, usegmt=True), now)
    assert in_a_minute is not None and 58 <= in_a_minute <= 61
    assert retry_after(formatdate(now - 60, usegmt=True), now) == 0.0  # a date past: now
    for unreadable in (None, "", "soon", "-5", "1.5e3", "²", "١٢", "３", "1²", "+5", "0x10"):
        assert retry_after(unreadable, now) is None, unreadable


def test_jitter_is_small_and_only_later() -> None:
    waits = {retry_delay(10.0, None) for _ in range(200)}
    assert all(10.0 <= w <= 10.0 * (1 + JITTER) for w in waits)
    assert len(waits) > 100  # not in lockstep
    assert retry_delay(10.0, None, rand=lambda: 1.0) == 10.0 * (1 + JITTER)
    assert retry_delay(0.0, None) == 0.0


def test_retry_after_wins_only_when_later_and_is_bounded() -> None:
    assert retry_delay(1.0, 30.0) == 30.0
    assert 5.0 <= retry_delay(5.0, 2.0) <= 5.0 * (1 + JITTER)  # earlier than planned: schedule
    assert retry_delay(1.0, 10 * RETRY_AFTER_CAP_S) == RETRY_AFTER_CAP_S


async def test_non_ascii_retry_after_is_ignored_not_fatal(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """`Retry-After: ²` (a digit to str.isdigit, not to RFC 9110) is no delay: the attempt is
    recorded and retried on schedule, never left to be claimed again without end."""
    path = receiver.new_path()
    receiver.answer(path, (503, {"Retry-After": "²"}), 200)
    sub = await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    first, second = await receiver.wait(path, 2, timeout=6)
    assert first.headers["X-Service-Delivery"] == second.headers["X-Service-Delivery"]
    assert 0.9 <= second.at - first.at < 3.0
    detail = await deliveries_when(
        ws.api,
        sub["id"],
        lambda d: d["recentDeliveries"] and d["recentDeliveries"][0]["status"] == "delivered",
    )
    assert detail["recentDeliveries"][0]["attemptCount"] == 2


async def test_receiver_retry_after_delays_the_next_attempt(
    system: System, ws: Workspace, receiver: Receiver
) -> None:
    """Schedule 0,1,1: a 503 asking for 3 s gets its retry after 3 s, not after 1 s; a 429
    asking for less than the schedule gets the schedule's (jittered) 1 s."""
    path = receiver.new_path()
    receiver.answer(path, (503, {"Retry-After": "3"}), (429, {"Retry-After": "0"}), 200)
    await subscribe(ws.api, receiver.url(path))
    publish(system.database_url, "idea.created", ws.id, event_data("idea.created"))
    first, second, third = await receiver.wait(path, 3, timeout=20)
    assert 2.9 <= second.at - first.at < 5.0
    assert 0.9 <= third.at - second.at < 2.5
    assert first.headers["X-Service-Delivery"] == third.headers["X-Service-Delivery"]
