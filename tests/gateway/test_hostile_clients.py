"""Clients that spend the gateway's and the services' resources: large answers, slow request
heads, idle connections, floods of invented keys. Against the rig (its own database, small
timeouts and key cache bounds: conftest.RIG_ENV, a stand-in for the webhooks service)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
import uuid
from collections.abc import Iterator

import psycopg2
import pytest

from services.gateway.settings import GatewaySettings
from tests.support.api import Api, make_key

from .conftest import GatewayRig, clear_of_window_edge, from_own_address

PATH = "/api/v1/webhooks"
AUTH = "/api/v1/automation/auth"


def _invented() -> str:
    return "ims_live_" + secrets.token_hex(20)


# ---- Large answers -------------------------------------------------------------------------


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "chunked"])
async def test_large_answer_is_relayed_while_it_arrives(rig: GatewayRig, sized: bool) -> None:
    """An answer over the buffer limit streams: its first bytes reach the client before the
    service has sent the rest (a gateway that buffered it whole would wait for the end)."""
    ws = rig.workspace()
    hold, size = uuid.uuid4().hex, 4 << 20
    params = {"size": str(size), "hold": hold, "sized": "1" if sized else "0"}
    # identity: the bytes as the service sent them (compression has tests of its own)
    async with rig.http.get(
        rig.system.base_url + PATH,
        params=params,
        headers={"Authorization": f"Bearer {ws.key}", "Accept-Encoding": "identity"},
    ) as r:
        assert r.status == 200 and r.headers["X-Upstream"] == "yes"
        assert "RateLimit-Remaining" in r.headers and "X-Request-Id" in r.headers
        if sized:
            assert r.headers["Content-Length"] == str(size)
        first = await asyncio.wait_for(r.content.readexactly(256 << 10), 15)
        rig.upstream.release(hold)
        rest = await r.read()
    assert first == b"x" * len(first) and len(first) + len(rest) == size
    assert rest.endswith(b"y")


async def test_large_idempotent_answer_is_replayed_whole(rig: GatewayRig) -> None:
    """An answer above the streaming size is still kept whole for an Idempotency-Key replay."""
    ws = rig.workspace()
    body = {"name": uuid.uuid4().hex, "pad": 700_000}
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = await ws.api.post(PATH, json=body, headers=key)
    again = await ws.api.post(PATH, json=body, headers=key)
    assert first.status == again.status == 200 and len(first.body) > 700_000
    assert again.body == first.body and again.headers["Idempotent-Replayed"] == "true"
    assert rig.upstream.calls[body["name"]] == 1


async def test_answer_over_the_replay_limit_is_relayed_and_not_kept(rig: GatewayRig) -> None:
    """An answer too large to keep (over IDEMPOTENCY_MAX_STORED_BYTES) still reaches the client
    whole; the key is freed, as after a 5xx, rather than held by an answer that cannot be
    replayed."""
    ws = rig.workspace()
    pad = GatewaySettings.default("idempotency_max_stored_bytes") + 1
    body = {"name": uuid.uuid4().hex, "pad": pad}
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = await ws.api.post(PATH, json=body, headers=key)
    assert first.status == 200 and first.json["data"]["pad"] == "x" * pad
    again = await ws.api.post(PATH, json=body, headers=key)
    assert again.status == 200 and "Idempotent-Replayed" not in again.headers
    assert rig.upstream.calls[body["name"]] == 2


# ---- Slow heads and idle connections ---------------------------------------------------------


def _every_listener(rig: GatewayRig) -> Iterator[int]:
    for ports in rig.system.ports.values():
        yield from ports
    yield from rig.system.metrics_ports["gateway"]


async def _seconds_until_closed(
    port: int, first: bytes, then: bytes | None, limit: float
) -> float | None:
    """Send `first`, then `then` every 0.2 s (if given); seconds until the server hangs up."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(first)
        while time.monotonic() - started < limit:
            try:
                data = await asyncio.wait_for(reader.read(65536), 0.2)
            except TimeoutError:
                data = None
            if data == b"":
                return time.monotonic() - started
            if then is not None:
                writer.write(then)
    except ConnectionError:
        return time.monotonic() - started
    finally:
        writer.close()
    return None


async def test_slow_request_heads_are_cut_off_on_every_listener(rig: GatewayRig) -> None:
    """A client trickling a request head is disconnected after HTTP_HEADER_TIMEOUT_S (1 s here),
    by every process, long before the keep-alive timeout (5 s)."""
    ports = list(_every_listener(rig))
    took = await asyncio.gather(
        *(
            _seconds_until_closed(
                port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X-Slow: 1\r\n", 8
            )
            for port in ports
        )
    )
    assert all(t is not None and t < 3.5 for t in took), dict(zip(ports, took, strict=True))


async def test_idle_connections_close_after_the_keep_alive_timeout(rig: GatewayRig) -> None:
    """A kept-alive connection left idle is closed after HTTP_KEEPALIVE_TIMEOUT_S (5 s here), by
    every process; an idle connection is not cut by the head timeout."""
    ports = list(_every_listener(rig))
    took = await asyncio.gather(
        *(
            _seconds_until_closed(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", None, 12)
            for port in ports
        )
    )
    assert all(t is not None and 4 <= t <= 9 for t in took), dict(zip(ports, took, strict=True))


# ---- Floods of invented keys -----------------------------------------------------------------


@contextlib.contextmanager
def _key_table_locked(database_url: str) -> Iterator[None]:
    """While this holds, any key lookup in the database waits: only cached answers come back."""
    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute("LOCK TABLE gateway.api_keys IN ACCESS EXCLUSIVE MODE")
        yield
    finally:
        conn.rollback()
        conn.close()


async def _status(api: Api, timeout: float = 3.0) -> int | None:
    """The status of GET /automation/auth, None when it waits (on a key lookup) past `timeout`."""
    try:
        return (await asyncio.wait_for(api.get(AUTH), timeout)).status
    except TimeoutError:
        return None


async def test_address_window_and_key_format_come_before_the_lookup(rig: GatewayRig) -> None:
    """Past its per-address window a client's invented keys get 429 without a key lookup, and a
    token that cannot be a key gets 401 without one: both answer while the key table is locked."""
    base = rig.system.gateway_urls()[0]
    ws = rig.workspace()
    await clear_of_window_edge(60, margin=10)
    async with from_own_address() as flood, from_own_address() as other:
        anon = Api(flood, base, None, None)
        for _ in range(60):
            assert (await anon.with_key(_invented()).get(AUTH)).status == 401
        assert (await anon.with_key(_invented()).get(AUTH)).status == 429
        fresh = Api(other, base, ws.key, None)
        assert (await fresh.get(AUTH)).status == 200
        with _key_table_locked(rig.system.database_url):
            for _ in range(20):
                assert await _status(anon.with_key(_invented())) == 429
            for token in (
                "ims_live_short",
                "ims_live_" + "!" * 40,
                "ims_test_" + "a" * 129,
                "not-a-key-at-all",
                "ims_live_" + "a" * 31,
                "IMS_LIVE_" + "a" * 40,
            ):
                r = await asyncio.wait_for(fresh.with_key(token).get(AUTH), 3.0)
                assert r.status == 401 and r.json["error"]["code"] == "invalid_key", token
            assert await _status(fresh) == 200  # a key in use is answered from the cache


async def test_key_cache_is_lru_and_invented_keys_never_evict_real_ones(rig: GatewayRig) -> None:
    """Real keys live in a bounded LRU cache (2 here) and unknown ones in a separate bounded
    cache (3 here): a flood of invented keys leaves the real keys cached."""
    base = rig.system.gateway_urls()[0]
    ws = rig.workspace()
    b, c = (make_key(rig.system.database_url, ws.id)["key"] for _ in range(2))
    async with from_own_address() as session:
        api = Api(session, base, ws.key, None)
        for key in (ws.key, b, ws.key):
            assert (await api.with_key(key).get(AUTH)).status == 200
        invented = [_invented() for _ in range(10)]
        for key in invented:
            assert (await api.with_key(key).get(AUTH)).status == 401
        assert (await api.with_key(c).get(AUTH)).status == 200  # evicts b, the least recent
        with _key_table_locked(rig.system.database_url):
            assert await _status(api) == 200
            assert await _status(api.with_key(c)) == 200
            for key in invented[-3:]:
                assert await _status(api.with_key(key)) == 401
            assert await _status(api.with_key(b)) is None  # not cached: it waits on the lookup
            assert await _status(api.with_key(invented[0])) is None


def _readiness_queries(url: str, stop: threading.Event) -> set[object]:
    """The gateway's readiness queries seen while `stop` is not set: the distinct start times
    of its sessions' `SELECT 1`, sampled from pg_stat_activity as fast as it answers."""
    seen: set[object] = set()
    conn = psycopg2.connect(url)
    conn.autocommit = True  # each sample a statement of its own, and a fresh view
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT now()")
            since = cur.fetchone()[0]  # an idle session shows its last query: not counted
            while not stop.is_set():
                cur.execute(
                    "SELECT pid, query_start FROM pg_stat_activity"
                    " WHERE application_name = 'ims-gateway' AND query = 'SELECT 1'"
                    " AND query_start > %s",
                    (since,),
                )
                seen.update(cur.fetchall())
    finally:
        conn.close()
    return seen


async def test_a_flood_of_readyz_costs_the_database_a_query_a_second(rig: GatewayRig) -> None:
    """/readyz on the public listener is open: 300 calls at once, then 300 more over the next
    second, take the database's answer from one check a second (each call ran a query)."""
    base = rig.system.gateway_urls()[0]

    async def ready() -> int:
        async with rig.http.get(base + "/readyz") as r:
            return r.status

    stop = threading.Event()
    sampler = asyncio.get_running_loop().run_in_executor(
        None, _readiness_queries, rig.system.database_url, stop
    )
    await asyncio.sleep(0.2)
    started = time.monotonic()
    try:
        statuses = await asyncio.gather(*(ready() for _ in range(300)))
        for _ in range(10):
            statuses += await asyncio.gather(*(ready() for _ in range(30)))
            await asyncio.sleep(0.1)
    finally:
        took = time.monotonic() - started
        stop.set()
        seen = await sampler
    assert statuses == [200] * 600
    print(f"600 /readyz in {took:.2f} s: {len(seen)} readiness queries seen")
    assert len(seen) <= took + 2, (len(seen), took)
