"""`POST /ideas/{id}/signals` against `POST /ideas/{id}/vote`, in one run on one system.

Both are one small write of an idea through the gateway: a vote upserts a row and recounts the
idea's votes; a signal scores its text (VADER: no sentiment is given), looks for a customer by
its sender's e-mail, inserts a row, recounts the idea's signal figures and writes
`idea.signal_detected`. One workspace seeded with `BENCH_SIGNAL_IDEAS` ideas (default 100,000);
each request goes to a random one of 20,000 of them. Rounds alternate vote and signal (the
order flips each round) so that drift on the shared machine hits both; each round is
`CLIENTS` clients calling back to back for `BENCH_SECONDS`, bounded in count. The figure is the
ratio of requests a second, signal over vote. `python -m bench signals`; results in
bench/results/signals.json and signals.md.
"""

from __future__ import annotations

import os
import random
from typing import Any

import aiohttp

from bench.common import (
    Client,
    new_workspace,
    pooled,
    running_system,
    seed_ideas,
    timed_loop,
    write_results,
)

IDEAS = int(os.environ.get("BENCH_SIGNAL_IDEAS", "100000"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CLIENTS = 4
TEXTS = (
    "Love the new export, but the CSV misses the custom fields we rely on.",
    "The editor crashes whenever I paste a table. Really frustrating.",
    "Could you add SSO for the admin console? Our security team asks for it.",
)


async def measure(c: Client, ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    rnd = random.Random(5)

    async def vote(i: int) -> None:
        idea = ids[rnd.randrange(len(ids))]
        await c.call("POST", f"/api/v1/ideas/{idea}/vote", json={"voter": f"bench-{i}"})

    async def signal(i: int) -> None:
        idea = ids[rnd.randrange(len(ids))]
        body = {"platform": "zendesk", "content": TEXTS[i % 3], "userEmail": f"u{i}@example.org"}
        await c.call("POST", f"/api/v1/ideas/{idea}/signals", json=body)

    paths = {"vote": vote, "signal": signal}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in paths}
    for fn in paths.values():  # warm both
        await timed_loop(fn, CLIENTS, 1.0, 200)
    for r in range(ROUNDS):
        for name in list(paths)[:: 1 if r % 2 == 0 else -1]:
            runs[name].append(await timed_loop(paths[name], CLIENTS, SECONDS, 20_000, raw=True))
    return runs


async def main() -> dict[str, Any]:
    async with running_system() as system:
        ws = new_workspace(system)
        seeded, seed_seconds, ids = seed_ideas(system, ws["id"], IDEAS, 1000, 20000)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:
            runs = await measure(Client(session, system.base_url, ws["key"]), ids)
    results = {name: pooled(r) for name, r in runs.items()}
    ratio = round(results["signal"]["rps"] / results["vote"]["rps"], 3)
    per_round = [
        round(s["rps"] / v["rps"], 3) for s, v in zip(runs["signal"], runs["vote"], strict=True)
    ]
    load = [round(x, 2) for x in os.getloadavg()]
    data = {
        "seeded_ideas": seeded["ideas"],
        "seed_seconds": seed_seconds,
        "clients": CLIENTS,
        "seconds_per_round": SECONDS,
        "results": results,
        "signal_vs_vote_rps": ratio,
        "signal_vs_vote_rps_per_round": per_round,
        "load_average": load,
    }
    md = [
        "# Signals benchmark: `POST /ideas/{id}/signals` against `POST /ideas/{id}/vote`",
        "",
        f"One run, one system, one workspace seeded with {seeded['ideas']:,} ideas; through the "
        f"gateway on 127.0.0.1, {CLIENTS} clients back to back, {ROUNDS} alternating rounds of "
        f"{SECONDS:.0f} s per write, pooled. 2 cores shared by the clients, the gateway, the "
        f"services and PostgreSQL (load average at the end: {', '.join(map(str, load))}).",
        "",
        "| write | requests | requests/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|",
    ]
    for name, v in results.items():
        md.append(f"| {name} | {v['requests']} | {v['rps']} | {v['p50_ms']} | {v['p99_ms']} |")
    md += [
        "",
        f"Signal / vote, requests a second: **{ratio}** (per round: "
        f"{', '.join(map(str, per_round))}).",
    ]
    write_results("signals", data, "\n".join(md))
    print("\n".join(md))
    return data
