"""A tool call against its REST twin, in one run on one system.

Pairs: `get_idea` against `GET /api/v1/ideas/{id}`, and `create_idea` against
`POST /api/v1/ideas`. Each tool call is measured two ways: with the official SDK client (one
initialized session, what an assistant uses) and as a bare HTTP POST of the `tools/call`
message (the server side alone, without the client's own work). Everything goes through the
gateway. Rounds alternate REST, bare MCP and SDK so that drift on the shared machine hits all
three alike; each round is one client calling back to back (latency, not capacity), bounded in
count and time. `python -m bench mcp`; results in bench/results/mcp.json and mcp.md.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

import aiohttp
import orjson

from bench.common import Client, new_workspace, running_system, timed_loop, write_results
from tests.mcp.support import MCP_PATH, mcp_session

SECONDS = float(os.environ.get("BENCH_MCP_SECONDS", "4"))
CAP = int(os.environ.get("BENCH_MCP_CAP", "2000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def _tool_message(name: str, arguments: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


async def _bare_call(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str], body: bytes
) -> None:
    async with http.post(url, data=body, headers=headers) as r:
        answer = await r.json()
        if r.status != 200 or answer["result"].get("isError"):
            raise RuntimeError(f"tools/call: {r.status} {answer}")


async def _measure(base: str, key: str, idea_id: str) -> dict[str, list[dict[str, Any]]]:
    rounds: dict[str, list[dict[str, Any]]] = {}
    seq = itertools.count()
    auth = {**HEADERS, "Authorization": f"Bearer {key}"}
    url = base + MCP_PATH
    async with aiohttp.ClientSession() as http, mcp_session(base, key) as sdk:
        rest = Client(http, base, key)

        async def sdk_call(name: str, **arguments: Any) -> None:
            result = await sdk.call_tool(name, arguments)
            if result.is_error:
                raise RuntimeError(f"{name}: {result.structured_content}")

        cases = {
            "get: REST": lambda i: rest.call("GET", f"/api/v1/ideas/{idea_id}"),
            "get: MCP, bare HTTP": lambda i: _bare_call(
                http, url, auth, _tool_message("get_idea", {"id": idea_id})
            ),
            "get: MCP, SDK client": lambda i: sdk_call("get_idea", id=idea_id),
            "create: REST": lambda i: rest.call(
                "POST", "/api/v1/ideas", json={"title": f"bench rest {next(seq)}"}
            ),
            "create: MCP, bare HTTP": lambda i: _bare_call(
                http, url, auth, _tool_message("create_idea", {"title": f"bench {next(seq)}"})
            ),
            "create: MCP, SDK client": lambda i: sdk_call(
                "create_idea", title=f"bench sdk {next(seq)}"
            ),
        }
        for fn in cases.values():  # warm every path (connections, caches, prepared plans)
            for i in range(20):
                await fn(i)
        for _ in range(ROUNDS):
            for name, fn in cases.items():
                rounds.setdefault(name, []).append(await timed_loop(fn, 1, SECONDS, CAP))
    return rounds


def _median(runs: list[dict[str, Any]], key: str) -> float:
    values = sorted(r[key] for r in runs)
    return values[len(values) // 2]


async def main() -> dict[str, Any]:
    async with running_system() as system:
        ws = new_workspace(system)
        async with aiohttp.ClientSession() as http:
            idea = await Client(http, system.base_url, ws["key"]).call(
                "POST", "/api/v1/ideas", json={"title": "The idea every call reads"}
            )
        rounds = await _measure(system.base_url, ws["key"], idea["data"]["id"])
    load = os.getloadavg()
    rows = {
        name: {
            "p50_ms": _median(runs, "p50_ms"),
            "p99_ms": _median(runs, "p99_ms"),
            "calls_per_s": _median(runs, "rps"),
            "rounds": runs,
        }
        for name, runs in rounds.items()
    }
    data = {"seconds_per_round": SECONDS, "rounds": ROUNDS, "load_average": load, "paths": rows}
    lines = [
        "# MCP benchmark: a tool call against its REST twin",
        "",
        f"One run, one system, one client calling back to back through the gateway; {ROUNDS} "
        f"alternating rounds of {SECONDS:g} s per path, medians shown. 2 cores shared by the "
        f"client, the gateway, the services and PostgreSQL (load average at the end: "
        f'{load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}). "Bare HTTP" POSTs the `tools/call` '
        'message itself; "SDK client" is the official MCP client\'s `call_tool` on one '
        "initialized session.",
        "",
        "| path | p50 ms | p99 ms | calls/s |",
        "|---|---|---|---|",
        *(
            f"| {name} | {r['p50_ms']} | {r['p99_ms']} | {r['calls_per_s']} |"
            for name, r in rows.items()
        ),
        "",
    ]
    for op in ("get", "create"):
        rest, bare, sdk = (
            rows[f"{op}: {p}"]["p50_ms"] for p in ("REST", "MCP, bare HTTP", "MCP, SDK client")
        )
        lines.append(
            f"`{op}` p50: REST {rest} ms, MCP {bare} ms bare (+{bare - rest:.2f} ms: "
            f"the MCP hop and JSON-RPC), {sdk} ms with the SDK client."
        )
    write_results("mcp", data, "\n".join(lines))
    print("\n".join(lines))
    return data


if __name__ == "__main__":
    asyncio.run(main())
