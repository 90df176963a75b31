"""gzip through the gateway (docs/api.md): bodies over 1 KiB when Accept-Encoding allows it,
streamed exports included; Content-Length and Vary right; the services answer plain."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.support.api import Workspace
from tests.support.processes import System

from .conftest import GatewayRig


@pytest.fixture(scope="module")
async def raw() -> AsyncIterator[aiohttp.ClientSession]:
    """A client that shows bodies as they arrive and sends only the headers it is given."""
    async with aiohttp.ClientSession(
        auto_decompress=False, skip_auto_headers=("Accept-Encoding",)
    ) as session:
        yield session


async def get(
    raw: aiohttp.ClientSession,
    system: System,
    ws: Workspace,
    path: str,
    encoding: str | None,
    **params: Any,
) -> tuple[Any, bytes]:
    headers = {"Authorization": f"Bearer {ws.key}"}
    if encoding is not None:
        headers["Accept-Encoding"] = encoding
    async with raw.get(system.base_url + path, headers=headers, params=params) as r:
        assert r.status == 200, await r.read()
        return r.headers, await r.read()


async def ideas(ws: Workspace, n: int) -> None:
    r = await ws.api.post(
        "/api/v1/ideas/batch",
        json={"ideas": [{"title": f"Idea {i}", "summary": "x" * 100} for i in range(n)]},
    )
    assert r.status == 200


async def test_answer_over_1kib_is_gzipped_when_accepted(
    raw: aiohttp.ClientSession, system: System, ws: Workspace
) -> None:
    """gzip: Content-Encoding, the compressed Content-Length, Vary; the same JSON inside."""
    await ideas(ws, 20)
    plain_headers, plain = await get(raw, system, ws, "/api/v1/ideas", None, limit=20)
    headers, body = await get(raw, system, ws, "/api/v1/ideas", "gzip, deflate", limit=20)
    assert len(plain) > 1024 and "Content-Encoding" not in plain_headers
    assert headers["Content-Encoding"] == "gzip"
    assert int(headers["Content-Length"]) == len(body) < len(plain) / 3
    assert "Accept-Encoding" in headers["Vary"] and "Accept-Encoding" in plain_headers["Vary"]
    assert gzip.decompress(body) == plain
    # The tests' client decompresses and checks the answer against the document as ever.
    r = await ws.api.get("/api/v1/ideas", params={"limit": 20})
    assert r.status == 200 and r.headers["Content-Encoding"] == "gzip" and len(r.data) == 20


@pytest.mark.parametrize("encoding", ["identity", "gzip;q=0", "br", "deflate;q=1, *;q=0"])
async def test_no_gzip_unless_the_client_accepts_it(
    raw: aiohttp.ClientSession, system: System, ws: Workspace, encoding: str
) -> None:
    await ideas(ws, 20)
    headers, body = await get(raw, system, ws, "/api/v1/ideas", encoding, limit=20)
    assert "Content-Encoding" not in headers and orjson.loads(body)["data"]
    assert int(headers["Content-Length"]) == len(body) > 1024
    assert "Accept-Encoding" in headers["Vary"]


async def test_gzip_by_wildcard(raw: aiohttp.ClientSession, system: System, ws: Workspace) -> None:
    await ideas(ws, 20)
    headers, body = await get(raw, system, ws, "/api/v1/ideas", "*", limit=20)
    assert headers["Content-Encoding"] == "gzip" and orjson.loads(gzip.decompress(body))


async def test_answer_of_1kib_or_less_stays_plain(
    raw: aiohttp.ClientSession, system: System, ws: Workspace
) -> None:
    headers, body = await get(raw, system, ws, "/api/v1/automation/auth", "gzip")
    assert len(body) <= 1024 and orjson.loads(body)["valid"] is True
    assert "Content-Encoding" not in headers and "Vary" not in headers


@pytest.mark.parametrize("fmt", ["json", "csv"])
async def test_export_streams_gzipped(
    raw: aiohttp.ClientSession, system: System, ws: Workspace, fmt: str
) -> None:
    """An export is compressed as it streams: chunked, no Content-Length, the same bytes."""
    await ideas(ws, 40)
    headers, body = await get(raw, system, ws, "/api/v1/export/ideas", "gzip", format=fmt)
    plain_headers, plain = await get(raw, system, ws, "/api/v1/export/ideas", None, format=fmt)
    assert headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain_headers
    assert headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in headers
    assert "Accept-Encoding" in headers["Vary"]
    assert headers["Content-Disposition"] == plain_headers["Content-Disposition"]
    assert gzip.decompress(body) == plain and len(plain) > 1024


async def test_services_answer_plain(rig: GatewayRig) -> None:
    """The client's Accept-Encoding stops at the gateway: the service is never asked to
    compress, and the gateway compresses its answer once."""
    ws = rig.workspace()
    before = len(rig.upstream.accept_encodings)
    r = await ws.api.post(
        "/api/v1/webhooks",
        json={"name": uuid.uuid4().hex, "pad": "y" * 2000},
        headers={"Accept-Encoding": "gzip"},
    )
    assert r.status == 200 and r.headers["Content-Encoding"] == "gzip"
    assert r.json["data"]["pad"] == "y" * 2000
    assert rig.upstream.accept_encodings[before:] == [None]
