"""`make bench-load`: the realistic mix through the gateway with Locust, with one replica of
each HTTP process and then with two.

A workspace seeded with `BENCH_LOAD_IDEAS` ideas (default 20,000) and 1,000 customers, four
keys, and two webhook subscriptions to a receiver process (one to `idea.created`, one to every
idea event). Locust (bench/locustfile.py, headless, `BENCH_LOAD_USERS` users (default 64) with
no think time) replays the mix for `BENCH_LOAD_SECONDS` (default 60) after a 10 s warm-up.
Reported per route family: requests/s, p50 / p99 / p99.9 and failures; answers by status;
CPU (share of one core) and resident memory of every process, Locust's included. Locust runs
on the same 2 cores as the system, so capacity here is the machine's, shared.

Locust's statistics are per request name; the locustfile names each request by family.
Results: bench/results/load.json and load.md (`python -m bench.load`).
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import psycopg2

from bench.common import seed_ideas, start_system, stop_system, write_results
from bench.reference import machine
from tests.support.api import make_key, make_workspace
from tests.support.processes import (
    LOG_DIR,
    SERVICES,
    System,
    create_database,
    drop_database,
    free_port,
)

ROOT = Path(__file__).resolve().parents[1]
IDEAS = int(os.environ.get("BENCH_LOAD_IDEAS", "20000"))
USERS = int(os.environ.get("BENCH_LOAD_USERS", "64"))
SECONDS = int(os.environ.get("BENCH_LOAD_SECONDS", "60"))
WARMUP_S = 10
FAMILIES = (
    "list",
    "detail",
    "subresource",
    "create",
    "vote",
    "patch",
    "link",
    "analytics",
    "export",
)
ENV = {
    "LOG_LEVEL": "info",
    "EXPORT_PER_HOUR": "1000000",
    "WEBHOOK_RETRY_SCHEDULE": "0,1,1,2,5",
    "WEBHOOK_TIMEOUT_S": "5",
}


# ---- the receiver -------------------------------------------------------------------------


class ReceiverProcess:
    """A bare aiohttp receiver in a process of its own (`python -m bench.load receiver`)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.out = Path(tempfile.mkstemp(suffix=".json")[1])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.load", "receiver", str(self.port), str(self.out)],
            cwd=ROOT,
        )

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def report(self) -> dict[str, Any]:
        """What arrived so far: the receiver writes it on SIGUSR1."""
        assert self.proc is not None
        before = self.out.stat().st_mtime_ns
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while self.out.stat().st_mtime_ns == before and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.05)
        return json.loads(self.out.read_text() or "{}")  # type: ignore[no-any-return]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
        self.out.unlink(missing_ok=True)


def _receiver(port: int, out: str) -> None:
    from aiohttp import web

    created: dict[str, int] = {}
    counts = {"deliveries": 0}

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        counts["deliveries"] += 1
        if request.path == "/created":
            idea = json.loads(body)["data"]["idea"]["id"]
            created[idea] = created.get(idea, 0) + 1
        return web.Response(status=204)

    def dump() -> None:
        with open(out, "w") as f:
            json.dump(
                {
                    "deliveries": counts["deliveries"],
                    "created": list(created),
                    "duplicates": sum(n - 1 for n in created.values()),
                },
                f,
            )

    async def on_startup(app: web.Application) -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump)

    app = web.Application()
    app.on_startup.append(on_startup)
    app.router.add_post("/{tail:.*}", hook)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


# ---- the system and its workspace ---------------------------------------------------------


async def start(replicas: int, url: str) -> System:
    return await start_system(url, replicas={svc: replicas for svc in SERVICES}, env=ENV)


async def prepare(system: System, receiver: ReceiverProcess) -> dict[str, Any]:
    """Seed a workspace, make its keys, subscribe the receiver; the Locust spec."""
    ws = make_workspace(system.database_url, rate_limit=1_000_000_000)
    keys = [make_key(system.database_url, ws["id"], name=f"load {i}")["key"] for i in range(4)]
    await asyncio.to_thread(seed_ideas, system, ws["id"], IDEAS, 1000, 1)
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute("SELECT id::text FROM ideas.ideas WHERE workspace_id = %s", (ws["id"],))
        ideas = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT id::text FROM customers.customers WHERE workspace_id = %s", (ws["id"],))
        customers = [r[0] for r in cur.fetchall()]
    conn.close()
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {keys[0]}"}) as s:
        for path, events in (
            ("/created", ["idea.created"]),
            ("/all", ["idea.created", "idea.updated", "idea.status_changed", "idea.voted"]),
        ):
            async with s.post(
                system.base_url + "/api/v1/webhooks",
                json={"targetUrl": receiver.url(path), "events": events},
            ) as r:
                if r.status != 200:  # an event type this build does not know: the created one
                    assert path == "/all", await r.text()
                    async with s.post(
                        system.base_url + "/api/v1/webhooks",
                        json={
                            "targetUrl": receiver.url(path),
                            "events": ["idea.created", "idea.updated"],
                        },
                    ) as r2:
                        assert r2.status == 200, await r2.text()
    random.shuffle(ideas)
    return {
        "workspace": ws["id"],
        "keys": keys,
        "ideas": ideas[:5000],
        "customers": customers,
        "hosts": system.gateway_urls(),
    }


# ---- processes: CPU and memory --------------------------------------------------------------


def proc_sample(pid: int) -> tuple[float, float]:
    """(CPU seconds so far, resident MB) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return cpu, rss


def pids(system: System) -> dict[str, int]:
    return {f"{svc}-{i}": p.pid for svc, procs in system.procs.items() for i, p in enumerate(procs)}


# ---- Locust -----------------------------------------------------------------------------------


def _locust_command(users: int, seconds: int, csv_prefix: Path) -> list[str]:
    return [
        str(Path(sys.executable).parent / "locust"),
        "-f",
        str(ROOT / "bench/locustfile.py"),
        "--headless",
        "--users",
        str(users),
        "--spawn-rate",
        str(max(1, users)),
        "--run-time",
        f"{seconds}s",
        "--csv",
        str(csv_prefix),
        "--only-summary",
        "--loglevel",
        "WARNING",
        "--stop-timeout",
        "10",
    ]


def _rss_snapshot(watch: dict[str, int]) -> dict[str, float]:
    snap = {}
    for name, pid in watch.items():
        try:
            snap[name] = proc_sample(pid)[1]
        except OSError:
            pass
    return snap


def _watch_until_done(
    proc: subprocess.Popen[bytes],
    watch: dict[str, int],
    seconds: int,
    on_sample: Any,
    sample_every_s: float,
) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """Wait for locust; the CPU share and RSS of each watched process over the run, and the
    memory samples handed to `on_sample` every `sample_every_s`."""
    time.sleep(0.5)
    first = {name: proc_sample(pid) for name, pid in watch.items()}
    started = time.monotonic()
    last, elapsed = first, 1.0
    samples: list[dict[str, float]] = []
    next_sample = started + sample_every_s
    while proc.poll() is None:
        time.sleep(0.2)
        if on_sample is not None and time.monotonic() >= next_sample and proc.poll() is None:
            next_sample += sample_every_s
            samples.append({"t": round(time.monotonic() - started), **_rss_snapshot(watch)})
            on_sample(samples[-1])
        if time.monotonic() - started > seconds + 60:
            proc.kill()
        try:
            last = {name: proc_sample(pid) for name, pid in watch.items()}
            elapsed = time.monotonic() - started
        except OSError:
            pass
    processes = {
        name: {
            "cpu_core_share": round((last[name][0] - first[name][0]) / elapsed, 3),
            "rss_mb": round(last[name][1], 1),
        }
        for name in watch
        if name in last
    }
    return processes, samples


def run_locust(
    spec: dict[str, Any],
    users: int,
    seconds: int,
    watch: dict[str, int],
    per_user_rps: float | None = None,
    on_sample: Any = None,
    sample_every_s: float = 10.0,
) -> dict[str, Any]:
    """Run the mix; per family stats, statuses, and CPU/memory of the `watch` processes."""
    with tempfile.TemporaryDirectory() as tmp:
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(json.dumps({**spec, "per_user_rps": per_user_rps}))
        status_file = Path(tmp) / "statuses.json"
        env = {**os.environ, "LOAD_SPEC": str(spec_file), "LOAD_STATUS_OUT": str(status_file)}
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        cmd = _locust_command(users, seconds, Path(tmp) / "run")
        with open(LOG_DIR / "bench-locust.log", "ab") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)
        processes, samples = _watch_until_done(
            proc, {**watch, "locust": proc.pid}, seconds, on_sample, sample_every_s
        )
        stats = read_stats(Path(tmp) / "run_stats.csv")
        statuses = json.loads(status_file.read_text()) if status_file.exists() else {}
    return {
        "families": stats,
        "statuses": statuses,
        "processes": processes,
        "memory_samples": samples,
        "users": users,
        "seconds": seconds,
    }


def read_stats(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            name = "total" if row["Name"] == "Aggregated" else row["Name"]
            out[name] = {
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "rps": round(float(row["Requests/s"]), 1),
                "p50_ms": float(row["50%"] or 0),
                "p99_ms": float(row["99%"] or 0),
                "p999_ms": float(row["99.9%"] or 0),
            }
    return out


def five_hundreds(statuses: dict[str, dict[str, int]]) -> int:
    return sum(n for by in statuses.values() for code, n in by.items() if code.startswith("5"))


async def capacity(replicas: int, url: str, receiver: ReceiverProcess) -> dict[str, Any]:
    system = await start(replicas, url)
    try:
        spec = await prepare(system, receiver)
        watch = pids(system)
        await asyncio.to_thread(run_locust, spec, USERS, WARMUP_S, watch)
        result = await asyncio.to_thread(run_locust, spec, USERS, SECONDS, watch)
    finally:
        await stop_system(system)
    result["replicas"] = replicas
    result["load_average_end"] = [round(v, 1) for v in os.getloadavg()]
    result["five_hundreds"] = five_hundreds(result["statuses"])
    return result


async def main() -> dict[str, Any]:
    url = await asyncio.to_thread(create_database)
    receiver = ReceiverProcess()
    receiver.start()
    runs = []
    try:
        for replicas in (1, 2):
            runs.append(await capacity(replicas, url, receiver))
    finally:
        receiver.stop()
        await asyncio.to_thread(drop_database, url)
    data = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "make bench-load",
        "ideas": IDEAS,
        "users": USERS,
        "seconds": SECONDS,
        "runs": runs,
    }
    write_results("load", data, markdown(data))
    print(markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        "# Mixed load\n",
        f"`{data['command']}` on {data['date']}; {m['cores']} cores ({m['cpu']}), "
        f"{m['memory_gb']} GB, shared with Locust itself and other work.\n",
        f"Locust, {data['users']} users without think time, {data['seconds']} s after a warm-up; "
        f"{data['ideas']:,} seeded ideas, 4 keys, 2 webhook subscriptions attached. Mix: lists "
        "30, details 30, sub-resources 20, creates 5, votes 4, patches 4, links 2, analytics 4, "
        "exports 1 (percent).\n",
    ]
    for run in data["runs"]:
        lines.append(f"\n## {run['replicas']} replica(s) of each HTTP process\n")
        lines.append("| family | req/s | p50 ms | p99 ms | p99.9 ms | failures | answers |")
        lines.append("|---|---|---|---|---|---|---|")
        for fam in (*FAMILIES, "total"):
            s = run["families"].get(fam)
            if s is None:
                continue
            answers = (
                ", ".join(f"{k}: {v}" for k, v in sorted((run["statuses"].get(fam) or {}).items()))
                if fam != "total"
                else ""
            )
            lines.append(
                f"| {fam} | {s['rps']} | {s['p50_ms']:.0f} | {s['p99_ms']:.0f} "
                f"| {s['p999_ms']:.0f} | {s['failures']} | {answers} |"
            )
        lines.append(
            f"\n5xx answers: {run['five_hundreds']}; the machine's load average at "
            f"the end: {run.get('load_average_end')} (other work shared it).\n"
        )
        lines.append("| process | CPU (cores) | RSS MB |\n|---|---|---|")
        for name, p in sorted(run["processes"].items()):
            lines.append(f"| {name} | {p['cpu_core_share']} | {p['rss_mb']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "receiver":
        _receiver(int(sys.argv[2]), sys.argv[3])
    else:
        asyncio.run(main())
