"""Shared benchmark helpers: a running system, load generators, percentiles, result files.

Two load generators, because they answer different questions:
- `wrk_run`: flat out, for capacity (requests per second); at saturation its latencies are
  queueing, not service time.
- `paced_run`: a fixed schedule of send times at a given rate, in a process of its own; each
  latency is measured from the *scheduled* send time, so a stall delays the requests behind
  it and shows in the percentiles (no coordinated omission).
Every loop is bounded in count and time; targets are 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import math
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
# What the bench clients accept: unset, aiohttp's default (gzip, deflate), which the gateway
# answers with gzip; `identity` measures plain answers.
ACCEPT_ENCODING = os.environ.get("BENCH_ACCEPT_ENCODING")


def client_headers(key: str) -> dict[str, str]:
    """The headers of a bench client with `key`."""
    headers = {"Authorization": f"Bearer {key}"}
    if ACCEPT_ENCODING:
        headers["Accept-Encoding"] = ACCEPT_ENCODING
    return headers


if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from services.ctl.seed import seed  # noqa: E402
from tests.support.api import make_key, make_workspace  # noqa: E402
from tests.support.processes import (
    System,
    create_database,
    delete_queues,  # noqa: E402
    drop_database,
)


def proc_stat(pid: int) -> tuple[str, int, float] | None:
    """(name, parent pid, user + system CPU seconds so far) of a process (Linux /proc); None
    when it is gone. CPU per request hardly moves with what else the machine is doing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return stat[stat.index("(") + 1 : stat.rindex(")")], int(fields[1]), cpu


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (those still running)."""
    return sum(found[2] for pid in pids if (found := proc_stat(pid)) is not None)


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (0..100), nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(p / 100 * len(ordered) + 0.5))))
    return ordered[rank - 1]


def pct_ms(seconds: list[float], q: float) -> float:
    """The q-quantile (0..1) of durations in seconds, in milliseconds (index q * n); 0.0 for none."""
    s = sorted(seconds)
    return round(s[min(len(s) - 1, int(len(s) * q))] * 1000, 2) if s else 0.0


async def timed_loop(
    fn: Any, clients: int, seconds: float, cap: int, raw: bool = False
) -> dict[str, Any]:
    """Run `fn(i)` from `clients` workers until `seconds` pass or `cap` calls are made; with
    `raw`, the latencies too (`latencies_ms`), to pool with other runs' (`pooled`), and each
    call's send time (`sent_at`, `time.perf_counter()`: Linux's monotonic clock, the same in
    every process of the machine)."""
    latencies: list[float] = []
    sent_at: list[float] = []
    counter = iter(range(cap))
    end = time.perf_counter() + seconds

    async def worker() -> None:
        for i in counter:
            if time.perf_counter() > end:
                return
            t0 = time.perf_counter()
            await fn(i)
            latencies.append(time.perf_counter() - t0)
            sent_at.append(t0)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    out = {
        "requests": len(latencies),
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": pct_ms(latencies, 0.5),
        "p99_ms": pct_ms(latencies, 0.99),
    }
    if raw:
        out["latencies_ms"] = [round(x * 1000, 3) for x in latencies]
        out["sent_at"] = sent_at
    return out


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs of one load (`timed_loop` or `paced_run` with `raw`) as one: p50 and p99 of all
    their latencies, the mean rate, how many runs, and each run's own p50 and p99."""
    latencies = [x for r in runs for x in r["latencies_ms"]]
    rates = [r.get("rps", r.get("achieved_rps", 0.0)) for r in runs]
    return {
        "runs": len(runs),
        "requests": len(latencies),
        "rps": round(sum(rates) / len(rates), 1) if rates else 0.0,
        "p50_ms": round(percentile(latencies, 50), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "p50_p99_ms_per_run": [[r["p50_ms"], r["p99_ms"]] for r in runs],
    }


class Client:
    """Calls through the gateway with one key; a status outside `ok` raises."""

    def __init__(self, session: Any, base: str, key: str, ok: tuple[int, ...] = (200, 201)) -> None:
        self.s, self.base, self.ok = session, base, ok
        self.h = client_headers(key)

    async def call(self, method: str, path: str, **kw: Any) -> Any:
        async with self.s.request(method, self.base + path, headers=self.h, **kw) as r:
            body = await r.json()
            if r.status not in self.ok:
                raise RuntimeError(f"{method} {path}: {r.status} {body}")
            return body


@asynccontextmanager
async def running_system(
    replicas: dict[str, int] | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[System]:
    """Every service as its own process, a fresh database and AMQP prefix; torn down after."""
    url = create_database()
    prefix = f"imsbench{secrets.token_hex(4)}"
    system = System(
        url, prefix, replicas=replicas or {}, env_overrides={"LOG_LEVEL": "info", **(env or {})}
    )
    system.start()
    try:
        await system.wait_ready(timeout=60)
        yield system
    finally:
        system.stop()
        await delete_queues(prefix)
        drop_database(url)


async def start_system(
    url: str,
    root: Path = ROOT,
    replicas: dict[str, int] | None = None,
    env: dict[str, str] | None = None,
) -> System:
    """Every service as its own process on an existing database (`root`: the source tree)."""
    system = System(
        url,
        f"imsbench{secrets.token_hex(4)}",
        root=root,
        replicas=replicas or {},
        env_overrides={"LOG_LEVEL": "info", **(env or {})},
    )
    system.start()
    await system.wait_ready(timeout=90)
    return system


async def stop_system(system: System) -> None:
    system.stop()
    await delete_queues(system.amqp_prefix)


async def wait_http(url: str, timeout: float = 30.0) -> None:
    """Until `url` answers 200."""
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as s:
        while True:
            try:
                async with s.get(url) as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(url)
            await asyncio.sleep(0.1)


def seed_ideas(
    system: System, workspace_id: str, ideas: int, customers: int, sample: int
) -> tuple[dict[str, Any], float, list[str]]:
    """`ideasctl seed` into the workspace, then VACUUM ANALYZE so plans see the data.
    Returns what the seed reports, its seconds, and up to `sample` idea ids to call."""
    conn = psycopg2.connect(system.database_url, options="-c timezone=UTC")
    try:
        started = time.perf_counter()
        seeded = seed(conn, workspace_id, ideas, customers, 1)
        seconds = round(time.perf_counter() - started, 1)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE ideas.ideas")
            cur.execute(
                "SELECT id::text FROM ideas.ideas WHERE workspace_id = %s LIMIT %s",
                (workspace_id, sample),
            )
            ids = [r[0] for r in cur.fetchall()]
    finally:
        conn.close()
    return seeded, seconds, ids


def new_workspace(
    system: System, plan: str = "enterprise", rate_limit: int | None = 1_000_000_000
) -> dict[str, Any]:
    """A workspace with an all-scope key: {"id", "key", "key_id"}."""
    ws = make_workspace(system.database_url, plan=plan, rate_limit=rate_limit)
    key = make_key(system.database_url, ws["id"])
    return {"id": ws["id"], "key": key["key"], "key_id": key["id"]}


# ---- wrk: flat-out capacity ------------------------------------------------------------

_WRK_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    assert m, text
    return float(m.group(1)) * _WRK_UNITS[m.group(2)]


def wrk_run(
    url: str,
    headers: dict[str, str],
    duration_s: int = 10,
    connections: int = 32,
    method: str = "GET",
    body: bytes | None = None,
    threads: int = 1,
    paths: list[str] | None = None,
) -> dict[str, Any]:
    """Flat-out load with wrk; {"rps", "p50_ms", "p99_ms", "requests", "errors"}.
    With `paths`, each request goes to one of them (at random) on `url`'s host."""
    lines = [f'wrk.method = "{method}"']
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()]
    if body is not None:
        lines.append(f"wrk.body = {json.dumps(body.decode())}")
    if paths:
        lines.append("local paths = {" + ",".join(json.dumps(p) for p in paths) + "}")
        lines.append("request = function() return wrk.format(nil, paths[math.random(#paths)]) end")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        script = f.name
    try:
        out = subprocess.run(
            [
                "wrk",
                "-t",
                str(threads),
                "-c",
                str(connections),
                "-d",
                f"{duration_s}s",
                "--latency",
                "-s",
                script,
                url,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=duration_s + 30,
        ).stdout
    finally:
        os.unlink(script)
    pct = dict(re.findall(r"^\s+(\d+)%\s+(\S+)$", out, re.M))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        # no distribution when nothing came back in time
        "p50_ms": _ms(pct["50"]) if "50" in pct else None,
        "p99_ms": _ms(pct["99"]) if "99" in pct else None,
        "requests": int(re.search(r"(\d+) requests in", out).group(1)),  # type: ignore[union-attr]
        "errors": (int(non2xx.group(1)) if non2xx else 0)
        + (sum(int(g) for g in sock.groups()) if sock else 0),
        "connections": connections,
        "duration_s": duration_s,
    }


# ---- paced: latency at a fixed offered load ----------------------------------------------


Windows = list[tuple[float, float]]  # (start, end) in `time.perf_counter()` time


def paced_run(
    url: str,
    headers: dict[str, str],
    rate: float,
    duration_s: float = 10.0,
    method: str = "GET",
    body: bytes | None = None,
    max_in_flight: int = 2000,
    paths: list[str] | None = None,
    raw: bool = False,
    bodies: list[bytes] | None = None,
    windows: Windows | None = None,
    warm: int = 50,
) -> dict[str, Any]:
    """Offer `rate` requests/s for `duration_s` from a separate process; latency percentiles.
    With `paths` (full URLs), the requests go to them in turn instead of to `url`; with
    `bodies`, each request sends the next of them instead of `body`; with `windows`, the
    requests are offered at `rate` within each window only (the schedule's start and end,
    `duration_s` is then unused); `warm` requests at once before the schedule. With `raw`, the
    latencies too (`latencies_ms`) and each request's scheduled send time (`sent_at`, as
    `timed_loop`'s)."""
    spec = {
        "urls": paths or [url],
        "headers": headers,
        "rate": rate,
        "duration_s": duration_s,
        "method": method,
        "bodies": [b.decode() for b in bodies] if bodies else [body.decode() if body else None],
        "max_in_flight": max_in_flight,
        "raw": raw,
        "windows": windows,
        "warm": warm,
    }
    return _child("paced", json.dumps(spec), _span(duration_s, windows) + 60)


def _span(duration_s: float, windows: Windows | None) -> float:
    """Seconds from now to the end of a run."""
    return max(0.0, windows[-1][1] - time.perf_counter()) if windows else duration_s


def _schedule(spec: dict[str, Any], rate: float) -> list[float]:
    """Send times: absolute (perf_counter) within `windows`, else from 0 over `duration_s`."""
    if spec.get("windows"):
        return [
            start + k / rate
            for start, end in spec["windows"]
            for k in range(max(0, math.ceil((end - start) * rate)))
        ]
    return [i / rate for i in range(int(rate * float(spec["duration_s"])))]


async def _watch(stalls: list[tuple[float, float]]) -> None:
    """Record this event loop's own lateness (when, seconds) until cancelled."""
    while True:
        due = time.perf_counter() + 0.01
        await asyncio.sleep(0.01)
        if (late := time.perf_counter() - due) > 0.005:
            stalls.append((due, late))


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)  # ms, from the scheduled send time
    sent_at: list[float] = field(default_factory=list)
    stalls: list[tuple[float, float]] = field(default_factory=list)
    errors: int = 0
    late_starts: int = 0


def _paced_summary(
    spec: dict[str, Any], rate: float, sent: int, elapsed: float, t: _Tally
) -> dict[str, Any]:
    out = {
        "offered_rps": rate,
        "sent": sent,
        "ok": len(t.latencies),
        "errors": t.errors,
        "achieved_rps": round(sent / elapsed, 1) if elapsed else 0.0,
        "late_starts": t.late_starts,
        "p50_ms": round(percentile(t.latencies, 50), 2),
        "p90_ms": round(percentile(t.latencies, 90), 2),
        "p99_ms": round(percentile(t.latencies, 99), 2),
        "max_ms": round(max(t.latencies, default=0.0), 2),
        "duration_s": float(spec["duration_s"]),
        # the generator's own CPU: the machine's, taken from the system it measures
        "cpu_ms_per_request": round(time.process_time() * 1000 / max(1, sent), 3),
    }
    if spec.get("raw"):  # with `raw` alone: the stalls are reported with it
        out["latencies_ms"] = [round(x, 3) for x in t.latencies]
        out["sent_at"] = t.sent_at
        out["stalls"] = t.stalls
    return out


async def _paced(spec: dict[str, Any]) -> dict[str, Any]:
    import aiohttp

    rate = float(spec["rate"])
    tally = _Tally()
    bodies = [b.encode() if b is not None else None for b in spec["bodies"]]
    limit = asyncio.Semaphore(int(spec["max_in_flight"]))
    conn = aiohttp.TCPConnector(limit=int(spec["max_in_flight"]), keepalive_timeout=60)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        urls = spec["urls"]

        async def one(scheduled: float, i: int = 0) -> None:
            async with limit:
                try:
                    async with session.request(
                        spec["method"],
                        urls[i % len(urls)],
                        data=bodies[i % len(bodies)],
                        headers=spec["headers"],
                    ) as r:
                        await r.read()
                        ok = r.status < 400
                except (TimeoutError, aiohttp.ClientError):
                    ok = False
            if ok:
                tally.latencies.append((time.perf_counter() - scheduled) * 1000)
                tally.sent_at.append(scheduled)
            else:
                tally.errors += 1

        times = _schedule(spec, rate)
        # Warm the connection pool outside the measured schedule.
        warm = min(int(spec["warm"]), len(times))
        await asyncio.gather(*(one(time.perf_counter(), i) for i in range(warm)))
        tally = _Tally()
        if not spec.get("windows"):
            start = time.perf_counter() + 0.05
            times = [start + t for t in times]
        watcher = asyncio.create_task(_watch(tally.stalls)) if spec.get("raw") else None
        # The requests in flight only: a list of every request's task held tens of thousands
        # of them, and the gather at the end added a callback to each, stopping the loop for
        # 40 ms while the last requests were still in flight.
        pending: set[asyncio.Task[None]] = set()
        for i, scheduled in enumerate(times):
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.005:
                tally.late_starts += 1
            task = asyncio.create_task(one(scheduled, i))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
        if watcher is not None:
            watcher.cancel()
        elapsed = time.perf_counter() - times[0] if times else 0.0
    return _paced_summary(spec, rate, len(times), elapsed, tally)


def loop_run(
    urls: list[str],
    headers: dict[str, str],
    clients: int,
    duration_s: float,
    method: str = "GET",
    bodies: list[bytes] | None = None,
    windows: Windows | None = None,
) -> dict[str, Any]:
    """`clients` workers, each sending its next request as soon as its last answered, for
    `duration_s` (or within each of `windows` only), to `urls` in turn (with `bodies`, the
    next of them), from a separate process (so that the load the caller's own event loop
    generates meanwhile does not queue these requests' answers); the `timed_loop` figures
    with the latencies (`latencies_ms`) and send times (`sent_at`)."""
    spec = {
        "urls": urls,
        "headers": headers,
        "clients": clients,
        "duration_s": duration_s,
        "method": method,
        "bodies": [b.decode() for b in bodies] if bodies else [None],
        "windows": windows,
    }
    return _child("loop", json.dumps(spec), _span(duration_s, windows) + 60)


def _child(mode: str, spec: str, timeout: float) -> dict[str, Any]:
    """`python -m bench.common <mode>` with `spec` on its stdin: its result (the last line)."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.common", mode, "-"],
        cwd=ROOT,
        input=spec,
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    ).stdout
    try:
        return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]
    except ValueError as err:
        kept = Path(tempfile.mkstemp(prefix=f"bench-{mode}-", suffix=".out")[1])
        kept.write_text(out)
        raise RuntimeError(f"the {mode} generator's answer did not parse; kept in {kept}") from err


async def _loop(spec: dict[str, Any]) -> dict[str, Any]:
    import aiohttp

    urls, headers = spec["urls"], spec["headers"]
    bodies = [b.encode() if b is not None else None for b in spec["bodies"]]
    clients = int(spec["clients"])
    conn = aiohttp.TCPConnector(limit=clients, keepalive_timeout=60)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:

        async def call(i: int) -> None:
            url = urls[i % len(urls)]
            data = bodies[i % len(bodies)]
            async with session.request(spec["method"], url, data=data, headers=headers) as r:
                await r.read()
                if r.status >= 400:
                    raise RuntimeError(f"{url} answered {r.status}")

        await asyncio.gather(*(call(i) for i in range(clients)))  # warm
        if spec.get("windows"):
            return await windowed_loop(call, clients, spec["windows"])
        return await timed_loop(call, clients, float(spec["duration_s"]), 10**9, raw=True)


async def windowed_loop(fn: Any, clients: int, windows: Windows) -> dict[str, Any]:
    """`timed_loop`'s figures (with `raw`) of `fn(i)` from `clients` workers that send only
    within the windows, each as soon as its last call answered."""
    latencies: list[float] = []
    sent_at: list[float] = []
    counter = itertools.count()

    async def worker() -> None:
        for start, end in windows:
            while (now := time.perf_counter()) < end:
                if now < start:
                    await asyncio.sleep(start - now)
                    continue
                t0 = time.perf_counter()
                await fn(next(counter))
                latencies.append(time.perf_counter() - t0)
                sent_at.append(t0)

    await asyncio.gather(*(worker() for _ in range(clients)))
    seconds = sum(end - start for start, end in windows)
    return {
        "requests": len(latencies),
        "rps": round(len(latencies) / seconds, 1) if seconds else 0.0,
        "p50_ms": pct_ms(latencies, 0.5),
        "p99_ms": pct_ms(latencies, 0.99),
        "latencies_ms": [round(x * 1000, 3) for x in latencies],
        "sent_at": sent_at,
    }


# ---- results ------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A markdown table's lines."""
    return [
        f"| {' | '.join(header)} |",
        "|" + "---|" * len(header),
        *(f"| {' | '.join(str(c) for c in row)} |" for row in rows),
    ]


def timing_rows(measures: dict[str, Any]) -> list[list[Any]]:
    """Rows of name, requests, req/s, p50 and p99 of `timed_loop`'s results."""
    return [
        [name, v["requests"], v["rps"], v["p50_ms"], v["p99_ms"]]
        for name, v in measures.items()
        if isinstance(v, dict)
    ]


def source_tree(ref: str, into: str) -> Path:
    """The files of commit `ref`, extracted under `into`: a baseline to run beside today's code
    (`BENCH_BASELINE`)."""
    archive = subprocess.run(
        ["git", "archive", ref], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return Path(into)


def write_results(area: str, data: dict[str, Any], markdown: str) -> None:
    """bench/results/<area>.json and .md: every bench writes its figures through here."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{area}.json").write_text(json.dumps(data, indent=2) + "\n")
    (RESULTS / f"{area}.md").write_text(markdown.rstrip() + "\n")


def _main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ("paced", "loop"):
        spec = json.loads(sys.stdin.read() if sys.argv[2] == "-" else sys.argv[2])
        # No cyclic garbage collection in a load generator: a full collection over its tens
        # of thousands of requests' objects stops it for 50 to 80 ms, and every request
        # scheduled meanwhile counts the stop as the service's latency. It runs for minutes
        # at most; its memory is freed when it exits.
        gc.disable()
        coro = _paced(spec) if sys.argv[1] == "paced" else _loop(spec)
        try:
            import uvloop

            result = uvloop.run(coro)
        except ImportError:
            result = asyncio.run(coro)
        # The event loop may have left the pipe non-blocking: a result larger than the pipe
        # would then be cut short whenever the parent reads it slower than this writes.
        os.set_blocking(sys.stdout.fileno(), True)
        print(json.dumps(result), flush=True)
    else:
        sys.exit("usage: python -m bench.common paced|loop '<json spec>'")


if __name__ == "__main__":
    _main()
