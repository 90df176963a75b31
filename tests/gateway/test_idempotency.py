"""Idempotency-Key on POST (docs/gateway.md), against a stand-in that counts its calls."""

from __future__ import annotations

import asyncio
import uuid

import psycopg2

from services.gateway.settings import GatewaySettings

from .conftest import GatewayRig

PATH = "/api/v1/webhooks"


def body(**extra: object) -> dict[str, object]:
    return {"name": uuid.uuid4().hex, **extra}


async def test_repeat_replays_the_first_answer(rig: GatewayRig) -> None:
    """Same key, same body: the stored status and body, `Idempotent-Replayed: true`, no new call."""
    ws = rig.workspace()
    b = body()
    key = {"Idempotency-Key": "create-" + uuid.uuid4().hex}
    first = await ws.api.post(PATH, json=b, headers=key)
    assert first.status == 200 and "Idempotent-Replayed" not in first.headers
    for base in rig.system.gateway_urls():
        again = await ws.api.post(PATH, json=b, headers=key, base_url=base)
        assert again.status == 200 and again.body == first.body
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["X-Upstream"] == "yes"
        assert "RateLimit-Remaining" in again.headers
        assert again.headers["X-Request-Id"] != first.headers["X-Request-Id"]
    assert rig.upstream.calls[b["name"]] == 1


async def test_without_a_key_every_post_runs(rig: GatewayRig) -> None:
    ws = rig.workspace()
    b = body()
    for _ in range(2):
        assert (await ws.api.post(PATH, json=b)).status == 200
    assert rig.upstream.calls[b["name"]] == 2


async def test_same_key_other_body_is_conflict(rig: GatewayRig) -> None:
    ws = rig.workspace()
    key = {"Idempotency-Key": uuid.uuid4().hex}
    b = body()
    assert (await ws.api.post(PATH, json=b, headers=key)).status == 200
    r = await ws.api.post(PATH, json=body(), headers=key)
    assert r.status == 409 and r.json["error"]["code"] == "conflict"
    assert "RateLimit-Limit" in r.headers
    assert rig.upstream.calls[b["name"]] == 1


async def test_keys_belong_to_a_workspace(rig: GatewayRig) -> None:
    """Another workspace using the same key string is processed on its own."""
    a, b_ws = rig.workspace(), rig.workspace()
    key = {"Idempotency-Key": "shared-" + uuid.uuid4().hex}
    b = body()
    ra = await a.api.post(PATH, json=b, headers=key)
    rb = await b_ws.api.post(PATH, json=b, headers=key)
    assert ra.status == rb.status == 200 and "Idempotent-Replayed" not in rb.headers
    assert ra.json["data"]["workspaceId"] == a.id and rb.json["data"]["workspaceId"] == b_ws.id
    assert rig.upstream.calls[b["name"]] == 2


async def test_client_errors_are_stored_too(rig: GatewayRig) -> None:
    """A 4xx is an answer like any other: the repeat replays it without calling again."""
    ws = rig.workspace()
    b = body(status=422)
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = await ws.api.post(PATH, json=b, headers=key)
    again = await ws.api.post(PATH, json=b, headers=key)
    assert first.status == again.status == 422 and again.body == first.body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert rig.upstream.calls[b["name"]] == 1


async def test_server_errors_are_not_stored(rig: GatewayRig) -> None:
    """A 5xx is not kept: the retry with the same key is processed afresh."""
    ws = rig.workspace()
    b = body(failFirst=True)
    key = {"Idempotency-Key": uuid.uuid4().hex}
    assert (await ws.api.post(PATH, json=b, headers=key)).status == 503
    retry = await ws.api.post(PATH, json=b, headers=key)
    assert retry.status == 200 and "Idempotent-Replayed" not in retry.headers
    third = await ws.api.post(PATH, json=b, headers=key)
    assert third.headers["Idempotent-Replayed"] == "true" and third.body == retry.body
    assert rig.upstream.calls[b["name"]] == 2


async def test_concurrent_repeats_on_two_gateways_run_once(rig: GatewayRig) -> None:
    """The same key sent at once to both replicas: one is processed, the other 409 or a replay."""
    ws = rig.workspace()
    for _ in range(3):
        b = body(delay=0.3)
        key = {"Idempotency-Key": uuid.uuid4().hex}
        results = await asyncio.gather(
            *(
                ws.api.post(PATH, json=b, headers=key, base_url=u)
                for u in rig.system.gateway_urls() * 2
            )
        )
        statuses = sorted(r.status for r in results)
        assert statuses.count(200) >= 1 and set(statuses) <= {200, 409}, statuses
        for r in results:
            if r.status == 409:
                assert r.json["error"]["code"] == "conflict"
        fresh = [r for r in results if r.status == 200 and "Idempotent-Replayed" not in r.headers]
        assert len(fresh) == 1
        assert rig.upstream.calls[b["name"]] == 1


async def test_key_validation(rig: GatewayRig) -> None:
    """1 to 255 printable characters; otherwise 400 validation_error on Idempotency-Key."""
    ws = rig.workspace()
    b = body()
    for bad in ("k" * 256, "", "tab\there"):
        r = await ws.api.post(PATH, json=b, headers={"Idempotency-Key": bad})
        assert r.status == 400, repr(bad)
        assert r.json["error"] == {
            "code": "validation_error",
            "field": "Idempotency-Key",
            "message": r.json["error"]["message"],
        }
    assert b["name"] not in rig.upstream.calls
    ok = await ws.api.post(PATH, json=b, headers={"Idempotency-Key": "k" * 255})
    assert ok.status == 200


async def test_the_key_is_ignored_on_other_methods(rig: GatewayRig) -> None:
    ws = rig.workspace()
    r = await ws.api.get(PATH, headers={"Idempotency-Key": "k" * 300})
    assert r.status == 200


async def test_services_get_the_internal_token(rig: GatewayRig) -> None:
    """Every call the gateway forwarded carried the system's internal token."""
    ws = rig.workspace()
    assert (await ws.api.post(PATH, json=body())).status == 200
    assert rig.upstream.tokens_ok


def table(rig: GatewayRig) -> tuple[int, int]:
    """The idempotency table's rows and its total size (heap, TOAST and indexes), in bytes."""
    conn = psycopg2.connect(rig.system.database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*), pg_total_relation_size('gateway.idempotency_keys')"
                "  FROM gateway.idempotency_keys"
            )
            rows, size = cur.fetchone()
    finally:
        conn.close()
    return int(rows), int(size)


async def test_the_table_grows_by_at_most_the_limit_per_request(rig: GatewayRig) -> None:
    """Answers up to IDEMPOTENCY_MAX_STORED_BYTES are stored (one row each, the table growing by
    no more than the limit a request); a larger one is relayed whole, stores nothing and frees
    its key."""
    cap = GatewaySettings.default("idempotency_max_stored_bytes")
    ws = rig.workspace()
    rows, size = table(rig)
    stored = []
    for _ in range(3):
        b = body(pad=cap - 1024)
        key = {"Idempotency-Key": uuid.uuid4().hex}
        r = await ws.api.post(PATH, json=b, headers=key)
        assert r.status == 200 and cap - 1024 < len(r.body) <= cap
        stored.append((b, key, r.body))
    rows_after, size_after = table(rig)
    assert rows_after == rows + 3
    assert size_after - size <= 3 * cap, (size, size_after)
    for b, key, first in stored:
        again = await ws.api.post(PATH, json=b, headers=key)
        assert again.status == 200, (again.status, again.body[:300])
        assert again.headers.get("Idempotent-Replayed") == "true", dict(again.headers)
        assert again.body == first
    over = body(pad=cap)
    key = {"Idempotency-Key": uuid.uuid4().hex}
    for _ in range(2):
        r = await ws.api.post(PATH, json=over, headers=key)
        assert r.status == 200 and len(r.body) > cap and "Idempotent-Replayed" not in r.headers
    assert rig.upstream.calls[over["name"]] == 2
    assert table(rig)[0] == rows_after
