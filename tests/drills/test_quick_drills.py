"""The quick fault drills (the whole set: `make drills`): on private PostgreSQL and RabbitMQ,
under a steady write load with a receiver attached (gateway, ideas and webhooks), PostgreSQL
restarts, and the webhooks process (the dispatcher's) is SIGKILLed and started again.
Answers stay 2xx or 503 (never a 500, never past the timeout), readiness goes red and back to
green, and every committed event is delivered."""

from __future__ import annotations

import pytest

from tests.support.drills import Drills


@pytest.mark.timeout(240)
async def test_quick_drills() -> None:
    async with Drills(services=("gateway", "ideas", "webhooks")) as d:
        pg = await d.run("postgres_restart", d.restart_postgres)
        assert not pg.problems(must_go_red=("gateway", "ideas", "webhooks")), pg
        assert pg.statuses.get("503"), pg  # the outage was seen, and answered 503
        status, headers, body = d.seen_while_down["read"]
        assert status == 503 and body["error"]["code"] == "service_unavailable", body
        assert headers["Retry-After"] == "1", headers
        status, _, body = d.seen_while_down["ready"]
        assert status == 503 and body["checks"]["database"] is False, body
        killed = await d.run("sigkill_webhooks", d.kill("webhooks"))
        assert not killed.problems(must_go_red=("webhooks",)), killed
