"""`make drills`: every fault drill of tests/support/drills.py, one after another on one system
(private PostgreSQL and RabbitMQ, two gateways), each with its outcome; writes
bench/results/drills.json and drills.md and exits non-zero when any drill failed.

The drills: RabbitMQ stopped and started; PostgreSQL restarted; each process SIGKILLed and
started again (both gateways, ideas, customers, webhooks with its dispatcher, analytics, mcp); a
receiver that hangs beside the one that answers. The quick ones (PostgreSQL, webhooks, ideas,
a gateway) also run in `make test` (tests/drills).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench.common import write_results
from bench.reference import machine
from tests.support.drills import Drills, Outcome

BROKER_USERS = ("ideas", "webhooks")


async def main() -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    async with Drills() as d:
        plan: list[tuple[str, Any, dict[str, Any]]] = [
            ("rabbitmq_stop_start", d.restart_rabbitmq, {"must_go_red": BROKER_USERS}),
            (
                "postgres_restart",
                d.restart_postgres,
                {"must_go_red": ("gateway", "ideas", "webhooks")},
            ),
        ]
        for svc, i in (
            ("gateway", 0),
            ("gateway", 1),
            ("ideas", 0),
            ("customers", 0),
            ("webhooks", 0),
            ("analytics", 0),
            ("mcp", 0),
        ):
            plan.append(
                (
                    f"sigkill_{svc}-{i}",
                    d.kill(svc, i),
                    {"must_go_red": (f"{svc}-{i}",), "may_refuse": svc == "gateway"},
                )
            )
        plan.append(("hanging_receiver", d.hanging_receiver, {}))
        for name, fault, checks in plan:
            out: Outcome = await d.run(name, fault)
            problems = out.problems(**checks)
            if name == "hanging_receiver" and out.went_red:
                problems.append(f"readiness went red: {out.went_red}")
            results.append({**out.as_dict(), "problems": problems, "passed": not problems})
            print(
                f"{name}: {'passed' if not problems else problems} {out.as_dict()}",
                file=sys.stderr,
                flush=True,
            )
    data = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "make drills",
        "seconds": round(time.monotonic() - started),
        "drills": results,
        "passed": all(r["passed"] for r in results),
    }
    write_results("drills", data, markdown(data))
    print(markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    rows = "\n".join(
        f"| {r['drill']} | {'pass' if r['passed'] else 'FAIL'} | "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(r['statuses'].items()))} | {r['no_answer']} "
        f"| {r['over_timeout']} | {r['max_latency_ms']} | {', '.join(r['went_red']) or '-'} "
        f"| {r['committed']} | {r['lost']} | {r['duplicates']} |"
        for r in data["drills"]
    )
    return f"""# Fault drills

`{data["command"]}` on {data["date"]}; {m["cores"]} cores ({m["cpu"]}), {data["seconds"]} s.
Private PostgreSQL and RabbitMQ, two gateways, a steady load of idea creations (4 writers,
10 s client timeout) with a receiver subscribed to `idea.created`. Committed: ideas in the
workspace's table written during the drill; lost: committed but never delivered.

| drill | outcome | answers | no answer | past timeout | max ms | readiness red | committed | lost | duplicates |
|---|---|---|---|---|---|---|---|---|---|
{rows}
"""


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main())["passed"] else 1)
