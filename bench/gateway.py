"""The gateway's added cost: one call through the gateway against the same call made directly.

The call: `GET /api/v1/roadmap/stages`, authenticated and rate limited at the gateway (a huge
limit, so every request is counted in PostgreSQL and admitted), forwarded to the ideas service,
which answers from one indexed PostgreSQL read.

One run measures, in order: wrk flat out directly and through the gateway in alternating rounds,
then a paced load at half the gateway's measured capacity, through the gateway and directly.
`python -m bench gateway`; results in bench/results/gateway.json and gateway.md.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from bench.common import new_workspace, paced_run, running_system, write_results, wrk_run
from libs.common.caller import Caller

PATH = "/api/v1/roadmap/stages"
WRK_SECONDS = int(os.environ.get("BENCH_WRK_SECONDS", "5"))
PACED_SECONDS = float(os.environ.get("BENCH_PACED_SECONDS", "8"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "32"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))


def _direct_headers(internal_token: str, ws: dict[str, Any]) -> dict[str, str]:
    """What the gateway would send: the caller and the internal token."""
    from libs.api.route import SCOPES

    who = Caller(
        workspace_id=uuid.UUID(ws["id"]),
        workspace_name="bench",
        plan="enterprise",
        inbox_mode="direct",
        key_id=uuid.UUID(ws["key_id"]),
        key_name="API key",
        scopes=frozenset(SCOPES),
        request_id="bench",
    )
    h = who.headers(internal_token)
    h.pop("X-Request-Id")
    return h


async def main() -> dict[str, Any]:
    async with running_system() as system:
        result = await asyncio.to_thread(_measure, system)
    write_results("gateway", result, _markdown(result))
    print(_markdown(result))
    return result


def _measure(system: Any) -> dict[str, Any]:
    ws = new_workspace(system)
    service = system.service_url("ideas")
    direct = (service + PATH, _direct_headers(system.internal_token, ws))
    gateway = (system.base_url + PATH, {"Authorization": f"Bearer {ws['key']}"})
    for url, headers in (direct, gateway):  # warm caches, pools and connections
        wrk_run(url, headers, duration_s=2, connections=CONNECTIONS)
    # Alternating rounds: each gateway run is paired with the direct run just before it, so
    # both see the same machine (it may be shared); the ratio is the median of the pairs.
    rounds = []
    for _ in range(ROUNDS):
        d = wrk_run(*direct, duration_s=WRK_SECONDS, connections=CONNECTIONS)
        g = wrk_run(*gateway, duration_s=WRK_SECONDS, connections=CONNECTIONS)
        rounds.append({"direct": d, "gateway": g, "ratio": round(g["rps"] / d["rps"], 3)})
    mid = sorted(rounds, key=lambda r: r["ratio"])[len(rounds) // 2]
    rate = round(mid["gateway"]["rps"] / 2)
    paced_rounds = [
        {
            "gateway": paced_run(*gateway, rate=rate, duration_s=PACED_SECONDS),
            "direct": paced_run(*direct, rate=rate, duration_s=PACED_SECONDS),
        }
        for _ in range(ROUNDS)
    ]
    paced = {
        name: sorted((r[name] for r in paced_rounds), key=lambda x: x["p99_ms"])[
            len(paced_rounds) // 2
        ]
        for name in ("gateway", "direct")
    }
    return {
        "call": f"GET {PATH}",
        "service": "ideas",
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "flat_out": {"direct": mid["direct"], "gateway": mid["gateway"]},
        "ratio_rps": mid["ratio"],
        "rounds": rounds,
        "paced_rate_rps": rate,
        "paced": paced,
        "paced_rounds": paced_rounds,
        "aim": {"ratio_rps_min": 0.6, "paced_gateway_p99_ms_max": 50},
    }


def _markdown(r: dict[str, Any]) -> str:
    f, p = r["flat_out"], r["paced"]
    rows = "\n".join(
        f"| {name} | {f[name]['rps']:.0f} | {f[name]['p50_ms']:.2f} | {f[name]['p99_ms']:.2f} "
        f"| {p[name]['p50_ms']:.2f} | {p[name]['p99_ms']:.2f} | {p[name]['errors']} |"
        for name in ("direct", "gateway")
    )
    pairs = ", ".join(f"{x['gateway']['rps']:.0f}/{x['direct']['rps']:.0f}" for x in r["rounds"])
    load = ", ".join(f"{v:.1f}" for v in r["load_average"])
    p99s = ", ".join(
        f"{x['gateway']['p99_ms']:.0f}/{x['direct']['p99_ms']:.0f}" for x in r["paced_rounds"]
    )
    return f"""# Gateway benchmark

Call: `{r["call"]}` answered by {r["service"]}; {r["cores"]} cores shared by the load
generator, the gateway, the service and PostgreSQL (load average at the end: {load}).
Flat out: wrk, {f["gateway"]["connections"]} connections, {f["gateway"]["duration_s"]} s per run,
{len(r["rounds"])} alternating rounds (gateway/direct rps: {pairs}); the table shows the round
with the median ratio. Paced: {r["paced_rate_rps"]} requests/s (half the gateway's capacity)
for {p["gateway"]["duration_s"]:.0f} s, latency from each request's scheduled send time,
{len(r["paced_rounds"])} alternating rounds (gateway/direct p99 ms: {p99s}); the table shows
the median p99 of each.

| path | flat rps | flat p50 ms | flat p99 ms | paced p50 ms | paced p99 ms | paced errors |
|---|---|---|---|---|---|---|
{rows}

Gateway throughput / direct throughput: **{r["ratio_rps"]:.0%}** (aim: at least 60%).
Paced p99 through the gateway: **{p["gateway"]["p99_ms"]:.1f} ms** (aim: under 50 ms).
"""
