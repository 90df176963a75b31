"""`make soak`: the mix of bench/load.py at 70% of the measured capacity for `SOAK_SECONDS`
(default 600), one replica of each process; every process's resident memory sampled every 10 s.

Capacity: the one-replica total of bench/results/load.json when there is one (`make
bench-load`), else a 30 s flat-out run first. Fails (exit 1) when any process's memory at the
end is more than 10% above its memory after the warm-up (the first fifth of the run, at least
60 s), when any 5xx was answered, or when any webhook event was lost: every idea created during
the soak (the database's table is the ground truth) must have reached the receiver's
`idea.created` subscription. Results: bench/results/soak.json and soak.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

import psycopg2

from bench.common import RESULTS, stop_system, write_results
from bench.load import USERS, ReceiverProcess, five_hundreds, pids, prepare, run_locust, start
from bench.reference import machine
from tests.support.processes import create_database, drop_database

SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
SHARE = 0.7
GROWTH_MAX = 0.10


def capacity_from_results() -> float | None:
    try:
        data = json.loads((RESULTS / "load.json").read_text())
        return float(
            next(r for r in data["runs"] if r["replicas"] == 1)["families"]["total"]["rps"]
        )
    except (OSError, KeyError, StopIteration, ValueError):
        return None


def created_since(url: str, workspace: str, since: float) -> set[str]:
    conn = psycopg2.connect(url)
    with conn, conn.cursor() as cur:
        cur.execute(
            "SELECT id::text FROM ideas.ideas WHERE workspace_id = %s"
            " AND created_at >= to_timestamp(%s)",
            (workspace, since),
        )
        ids = {r[0] for r in cur.fetchall()}
    conn.close()
    return ids


async def deliveries(receiver: ReceiverProcess, committed: set[str]) -> tuple[Any, set[str]]:
    """Let the last deliveries arrive (up to 2 minutes); what the receiver got and the committed
    events it never got."""
    deadline = time.monotonic() + 120
    while True:
        got = await asyncio.to_thread(receiver.report)
        lost = committed - set(got.get("created", []))
        if not lost or time.monotonic() > deadline:
            return got, lost
        await asyncio.sleep(1)


def memory_growth(samples: list[dict[str, float]], warm_t: int) -> dict[str, Any]:
    """Each process's RSS after the warm-up, at the end and at most, and its growth."""
    warm = next((s for s in samples if s["t"] >= warm_t), samples[0] if samples else {})
    end = samples[-1] if samples else {}
    return {
        name: {
            "after_warmup_mb": round(warm[name], 1),
            "end_mb": round(end[name], 1),
            "max_mb": round(max(s.get(name, 0) for s in samples), 1),
            "growth": round(end[name] / warm[name] - 1, 3),
        }
        for name in end
        if name != "t" and name in warm and warm[name]
    }


def failures(memory: dict[str, Any], errors5: int, lost: set[str]) -> list[str]:
    """What fails the soak: memory growth past GROWTH_MAX (the load generator's aside), any
    5xx, any lost webhook event."""
    grew = {n: m["growth"] for n, m in memory.items() if m["growth"] > GROWTH_MAX and n != "locust"}
    return (
        ([f"memory grew more than {GROWTH_MAX:.0%}: {grew}"] if grew else [])
        + ([f"{errors5} answers were 5xx"] if errors5 else [])
        + ([f"{len(lost)} webhook events lost"] if lost else [])
    )


async def main() -> dict[str, Any]:
    url = await asyncio.to_thread(create_database)
    receiver = ReceiverProcess()
    receiver.start()
    try:
        system = await start(1, url)
        try:
            spec = await prepare(system, receiver)
            watch = pids(system)
            cap = capacity_from_results()
            probed = cap is None
            if cap is None:
                probe = await asyncio.to_thread(run_locust, spec, USERS, 30, watch)
                cap = float(probe["families"]["total"]["rps"])
            rate = round(cap * SHARE, 1)
            started = time.time()
            samples: list[dict[str, float]] = []
            run = await asyncio.to_thread(
                run_locust, spec, USERS, SECONDS, watch, rate / USERS, samples.append, 10.0
            )
            committed = await asyncio.to_thread(created_since, url, spec["workspace"], started)
            got, lost = await deliveries(receiver, committed)
        finally:
            await stop_system(system)
    finally:
        receiver.stop()
        await asyncio.to_thread(drop_database, url)
    warm_t = max(60, SECONDS // 5)
    memory = memory_growth(samples, warm_t)
    errors5 = five_hundreds(run["statuses"])
    problems = failures(memory, errors5, lost)
    data = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": f"SOAK_SECONDS={SECONDS} make soak",
        "seconds": SECONDS,
        "capacity_rps": cap,
        "capacity_probed": probed,
        "offered_rps": rate,
        "achieved_rps": run["families"].get("total", {}).get("rps"),
        "families": run["families"],
        "statuses": run["statuses"],
        "processes": run["processes"],
        "memory": memory,
        "memory_samples": samples,
        "warmup_s": warm_t,
        "committed_events": len(committed),
        "lost_events": len(lost),
        "duplicate_events": got.get("duplicates", 0),
        "five_hundreds": errors5,
        "problems": problems,
        "passed": not problems,
        "load_average_end": [round(v, 1) for v in os.getloadavg()],
    }
    write_results("soak", data, markdown(data))
    print(markdown(data))
    return data


def markdown(d: dict[str, Any]) -> str:
    m = d["machine"]
    rows = "\n".join(
        f"| {n} | {v['after_warmup_mb']} | {v['end_mb']} | {v['max_mb']} | {v['growth']:+.1%} |"
        for n, v in sorted(d["memory"].items())
    )
    t = d["families"].get("total", {})
    return f"""# Soak

`{d["command"]}` on {d["date"]}; {m["cores"]} cores ({m["cpu"]}). Offered {d["offered_rps"]}
requests/s (70% of {d["capacity_rps"]} measured {
        "in a 30 s probe" if d["capacity_probed"] else "by make bench-load"
    }), achieved {d["achieved_rps"]}; p50 / p99 / p99.9
{t.get("p50_ms")} / {t.get("p99_ms")} / {t.get("p999_ms")} ms. Memory sampled every 10 s; the
warm-up ends at {d["warmup_s"]} s. Load average at the end: {d["load_average_end"]} (the
machine was shared with other work).

Outcome: **{"passed" if d["passed"] else "FAILED: " + "; ".join(d["problems"])}**. 5xx answers:
{d["five_hundreds"]}; webhook events committed {d["committed_events"]}, lost
{d["lost_events"]}, duplicates {d["duplicate_events"]}.

| process | RSS after warm-up MB | RSS at end MB | max MB | growth |
|---|---|---|---|---|
{rows}
"""


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main())["passed"] else 1)
