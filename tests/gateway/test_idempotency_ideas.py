"""Idempotency-Key end to end with real POSTs: creating ideas and voting through both gateways,
read-only POSTs (similar ideas, MCP reads) that store nothing, and what the table holds."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import orjson
import psycopg2

from libs.common.validation import MAX_BODY
from services.gateway.proxy import BUFFER_LIMIT
from services.gateway.settings import GatewaySettings
from tests.support.api import Workspace
from tests.support.processes import System

CAP = GatewaySettings.default("idempotency_max_stored_bytes")
MCP = "/api/v1/mcp"
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def stored(system: System, ws: Workspace) -> tuple[int, int, int]:
    """The workspace's idempotency records: how many, their bytes as stored (pg_column_size of
    the whole row, after PostgreSQL's compression) and their answers' bytes before it."""
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0),"
                "       coalesce(sum(octet_length(t.response_body)), 0)"
                "  FROM gateway.idempotency_keys t WHERE workspace_id = %s",
                (ws.id,),
            )
            count, size, body = cur.fetchone()
    finally:
        conn.close()
    return int(count), int(size), int(body)


def rpc(method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


async def idea_count(api) -> int:  # type: ignore[no-untyped-def]
    r = await api.get("/api/v1/ideas", params={"limit": 100})
    assert r.status == 200
    return len(r.data)


async def test_repeated_create_replays_and_creates_nothing(system: System, ws) -> None:
    """Same key and body: the first answer again, `Idempotent-Replayed: true`, one idea."""
    key = {"Idempotency-Key": f"create-{uuid.uuid4()}"}
    body = {"title": "Offline mode"}
    first = await ws.api.post("/api/v1/ideas", json=body, headers=key)
    assert first.status == 200
    for base in system.gateway_urls():
        again = await ws.api.post("/api/v1/ideas", json=body, headers=key, base_url=base)
        assert again.status == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json == first.json
    assert await idea_count(ws.api) == 1
    other = await ws.api.post("/api/v1/ideas", json={"title": "Other"}, headers=key)
    assert other.status == 409 and other.error["code"] == "conflict"
    assert await idea_count(ws.api) == 1


async def test_a_stored_validation_error_is_replayed(system: System, ws) -> None:
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = await ws.api.post("/api/v1/ideas", json={"title": ""}, headers=key)
    again = await ws.api.post("/api/v1/ideas", json={"title": ""}, headers=key)
    assert first.status == again.status == 400 and again.json == first.json
    assert again.headers["Idempotent-Replayed"] == "true"


async def test_concurrent_creates_on_two_gateways_make_one_idea(system: System, ws) -> None:
    """The same key sent at once to both replicas, several times over: one idea each time."""
    for i in range(3):
        key = {"Idempotency-Key": uuid.uuid4().hex}
        body = {"title": f"Concurrent {i}"}
        results = await asyncio.gather(
            *(
                ws.api.post("/api/v1/ideas", json=body, headers=key, base_url=url)
                for url in system.gateway_urls() * 2
            )
        )
        assert {r.status for r in results} <= {200, 409}
        fresh = [r for r in results if r.status == 200 and "Idempotent-Replayed" not in r.headers]
        assert len(fresh) == 1
    assert await idea_count(ws.api) == 3


async def test_two_keys_of_one_workspace_each_get_their_vote(system: System, ws: Workspace) -> None:
    """The same Idempotency-Key and body from two API keys of one workspace are two requests:
    both votes are recorded (each key votes as `key:<keyId>`); each key's repeat replays its own."""
    other = ws.api.with_key((await ws.new_key(system.database_url))["key"])
    idea = (await ws.api.post("/api/v1/ideas", json={"title": "Dark mode"})).data
    path = f"/api/v1/ideas/{idea['id']}/vote"
    key = {"Idempotency-Key": "vote-" + uuid.uuid4().hex}
    first = await ws.api.post(path, headers=key)
    second = await other.post(path, headers=key)
    assert first.status == second.status == 200
    assert "Idempotent-Replayed" not in second.headers
    for api, answer in ((ws.api, first), (other, second)):
        again = await api.post(path, headers=key)
        assert again.headers["Idempotent-Replayed"] == "true" and again.json == answer.json
    votes = (await ws.api.get(f"/api/v1/ideas/{idea['id']}/votes")).data
    assert votes["upvotes"] == 2 and len(votes["votes"]) == 2
    assert stored(system, ws)[0] == 2  # one record a key


def largest_batch() -> dict[str, Any]:
    """100 ideas with every field at its longest, the summaries in two-byte characters, as
    large as a request body may be (1 MiB)."""

    def body(summary: int) -> dict[str, Any]:
        return {
            "ideas": [
                {
                    "title": f"{i:03d} " + "t" * 496,
                    "summary": "é" * summary,
                    "source": "s" * 100,
                    "category": "c" * 100,
                    "url": "https://example.com/" + "u" * 1980,
                }
                for i in range(100)
            ]
        }

    summary = 5000
    while len(orjson.dumps(body(summary))) > MAX_BODY:
        summary -= 10
    return body(summary)


async def test_the_largest_batch_is_stored_and_replayed(system: System, ws: Workspace) -> None:
    """A batch of 100 ideas as large as a request may be: its answer is under the stored
    answer's limit, and is replayed."""
    batch = largest_batch()
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = await ws.api.post("/api/v1/ideas/batch", json=batch, headers=key)
    assert first.status == 200, first.body[:300]
    print(f"largest batch: request {len(orjson.dumps(batch))} B, answer {len(first.body)} B")
    assert len(first.body) <= CAP
    again = await ws.api.post("/api/v1/ideas/batch", json=batch, headers=key)
    assert again.headers["Idempotent-Replayed"] == "true" and again.body == first.body
    count, _, body = stored(system, ws)
    assert count == 1 and body == len(first.body)


async def test_a_repeat_sent_as_a_streamed_answer_ends_is_replayed(
    system: System, ws: Workspace
) -> None:
    """A streamed answer (the largest batch's, over 256 KiB) is stored before its last bytes
    leave: a repeat sent the moment the client has the first answer is replayed, never told
    "in progress". The test holds the record's row locked while the answer streams; the
    client cannot have the whole answer until the lock is let go and the answer stored."""
    batch = largest_batch()
    key = uuid.uuid4().hex
    locked, release = threading.Event(), threading.Event()

    def hold() -> str:
        conn = psycopg2.connect(system.database_url)
        try:
            with conn.cursor() as cur:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    cur.execute(
                        "SELECT state FROM gateway.idempotency_keys"
                        " WHERE workspace_id = %s AND key = %s FOR UPDATE",
                        (ws.id, key),
                    )
                    row = cur.fetchone()
                    if row is not None:
                        locked.set()
                        release.wait(30)
                        conn.commit()
                        return str(row[0])
                    conn.rollback()
                    time.sleep(0.002)
        finally:
            conn.close()
        return "never claimed"

    holder = asyncio.get_running_loop().run_in_executor(None, hold)
    first_call = asyncio.ensure_future(
        ws.api.post("/api/v1/ideas/batch", json=batch, headers={"Idempotency-Key": key})
    )
    try:
        assert await asyncio.to_thread(locked.wait, 30)
        done, _ = await asyncio.wait({first_call}, timeout=1.5)
        assert not done, "the client had the whole answer before it was stored"
    finally:
        release.set()
    assert await holder == "in_flight"
    first = await first_call
    assert first.status == 200 and len(first.body) > BUFFER_LIMIT
    again = await ws.api.post("/api/v1/ideas/batch", json=batch, headers={"Idempotency-Key": key})
    assert again.status == 200 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.body == first.body


async def test_read_only_posts_store_nothing(system: System, ws: Workspace) -> None:
    """POST /ideas/similar and MCP messages that change nothing run each time, whatever their
    Idempotency-Key, and leave no record; an MCP call of a tool that creates is stored, within
    the limit, and replayed."""
    await ws.api.post("/api/v1/ideas", json={"title": "Export to PDF"})
    key = {"Idempotency-Key": "read-" + uuid.uuid4().hex}
    similar = {"title": "export as pdf"}
    for _ in range(2):
        r = await ws.api.post("/api/v1/ideas/similar", json=similar, headers=key)
        assert r.status == 200 and "Idempotent-Replayed" not in r.headers
    # Another body with the same key is no conflict: nothing was kept.
    r = await ws.api.post("/api/v1/ideas/similar", json={"title": "pdf"}, headers=key)
    assert r.status == 200 and "Idempotent-Replayed" not in r.headers
    reads = [
        rpc("tools/list", {}),
        rpc("tools/call", {"name": "search_ideas", "arguments": {"query": "pdf"}}),
        rpc("tools/call", {"name": "find_similar_ideas", "arguments": {"text": "pdf"}}),
    ]
    for body in reads:
        for _ in range(2):
            r = await ws.api.post(MCP, body=body, headers={**MCP_HEADERS, **key})
            assert r.status == 200 and "Idempotent-Replayed" not in r.headers, r.body[:200]
    assert stored(system, ws) == (0, 0, 0)
    create = rpc("tools/call", {"name": "create_idea", "arguments": {"title": "Via MCP"}})
    headers = {**MCP_HEADERS, "Idempotency-Key": "create-" + uuid.uuid4().hex}
    first = await ws.api.post(MCP, body=create, headers=headers)
    again = await ws.api.post(MCP, body=create, headers=headers)
    assert first.status == again.status == 200
    assert again.headers["Idempotent-Replayed"] == "true" and again.body == first.body
    count, size, _ = stored(system, ws)
    assert count == 1 and 0 < size <= CAP
    listed = await ws.api.get("/api/v1/ideas", params={"search": "Via MCP"})
    assert len(listed.data) == 1
