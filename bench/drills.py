"""`make drills`: every fault drill of tests/support/drills.py, one after another on one system
(private PostgreSQL and RabbitMQ, two gateways), each with its outcome; writes
bench/results/drills.json and drills.md and exits non-zero when any drill failed.

The drills: RabbitMQ stopped and started; PostgreSQL restarted; each process SIGKILLed and
started again (both gateways, ideas, customers, webhooks with its dispatcher, analytics, mcp); a
receiver that hangs beside the one that answers. The quick ones (PostgreSQL, webhooks, ideas,
a gateway) also run in `make test` (tests/drills).

`python -m bench.drills postgres_restart --rounds 30` runs only the drills named (by their name
in the table), each that many times on the one system, and writes no result file: a line a
round on stderr and the tally (`--tally FILE`, also on stdout), for chasing a rare failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from bench.common import write_results
from bench.reference import machine
from tests.support.drills import Drills, Outcome

BROKER_USERS = ("ideas", "webhooks")


async def main(only: list[str], rounds: int = 1, tally: str | None = None) -> dict[str, Any]:
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
        unknown = set(only) - {name for name, _, _ in plan}
        if unknown:
            raise SystemExit(f"no such drill: {sorted(unknown)}")
        plan = [p for p in plan if not only or p[0] in only] * rounds
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
            if only:
                write_tally(results, tally)
    if only:
        return {"passed": all(r["passed"] for r in results)}
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


def write_tally(results: list[dict[str, Any]], path: str | None) -> None:
    """Rounds, failures, requests past the timeout, lost events, the worst latency."""
    tally = {
        "rounds": len(results),
        "failed": sum(not r["passed"] for r in results),
        "over_timeout": sum(r["over_timeout"] for r in results),
        "lost": sum(r["lost"] for r in results),
        "max_latency_ms": max(r["max_latency_ms"] for r in results),
        "answers": {
            s: sum(r["statuses"].get(s, 0) for r in results)
            for s in sorted({s for r in results for s in r["statuses"]})
        },
        "problems": [r["problems"] for r in results if r["problems"]],
    }
    text = json.dumps(tally)
    print(text, flush=True)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")


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
    parser = argparse.ArgumentParser(description="Fault drills on private servers")
    parser.add_argument("only", nargs="*", help="only these drills (default: every one, once)")
    parser.add_argument("--rounds", type=int, default=1, help="run the drills named this often")
    parser.add_argument("--tally", help="write the tally of the drills named to this file")
    args = parser.parse_args()
    if args.rounds != 1 and not args.only:
        parser.error("--rounds needs the drills named")
    sys.exit(0 if asyncio.run(main(args.only, args.rounds, args.tally))["passed"] else 1)
