"""The quick fault drills (the whole set: `make drills`): on private PostgreSQL and RabbitMQ,
under a steady write load with a receiver attached, PostgreSQL restarts and the webhooks
process (the dispatcher's) and the ideas process are SIGKILLed and started again.
Answers stay 2xx or 503 (never a 500, never past the timeout), readiness goes red and back to
green, and every committed event is delivered."""

from __future__ import annotations

import pytest

from tests.support.drills import Drills


@pytest.mark.timeout(240)
async def test_quick_drills() -> None:
    async with Drills() as d:
        pg = await d.run("postgres_restart", d.restart_postgres)
        assert not pg.problems(must_go_red=("gateway", "ideas", "webhooks")), pg
        assert pg.statuses.get("503"), pg  # the outage was seen, and answered 503
        for svc in ("webhooks", "ideas"):
            killed = await d.run(f"sigkill_{svc}", d.kill(svc))
            assert not killed.problems(must_go_red=(svc,)), killed
