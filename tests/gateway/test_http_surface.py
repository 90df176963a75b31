"""The public HTTP surface under odd and hostile input (docs/api.md, 10 and 11), through
the real gateway and services: header bytes, body encodings, methods, HEAD, metrics, Server."""

from __future__ import annotations

import gzip
import re
import uuid
import zlib
from typing import Any

import aiohttp
import orjson
import psycopg2

from libs.api.route import Route
from libs.api.table import ROUTE_TABLE
from tests.support.api import Api, Resp, Workspace
from tests.support.processes import SERVICES, System
from tests.support.rawhttp import exchange, request_bytes

IDEAS = "/api/v1/ideas"
RATE = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


def _auth(key: str) -> tuple[bytes, bytes]:
    return (b"Authorization", b"Bearer " + key.encode())


def _error(answer: Any) -> dict[str, Any]:
    return orjson.loads(answer.body)["error"]  # type: ignore[no-any-return]


# ---- Authorization and forwarded header bytes ---------------------------------------------


async def test_non_ascii_bearer_token_is_invalid_key(system: System) -> None:
    """A token holding non-ASCII bytes (UTF-8 or not) is 401 invalid_key, never a 500."""
    tokens = [
        b"ims_live_" + "é".encode() * 40,
        b"ims_live_" + b"\xe9" * 40,
        b"\xff\xfe",
        "ключ".encode(),
        b"ims_live_" + b"a" * 39 + b"\x80",
    ]
    for token in tokens:
        raw = request_bytes("GET", IDEAS, [(b"Authorization", b"Bearer " + token)])
        answer = await exchange(system.base_url, raw)
        assert answer.status == 401 and _error(answer)["code"] == "invalid_key", token
        assert all(h in answer.headers for h in RATE), token


async def test_authorization_oddities_are_never_server_errors(system: System) -> None:
    """Every odd Authorization header gets its 401 (or the parser's 400/431), never a 5xx."""
    unauthorized = [
        b"",
        b" ",
        b"Bearer",
        b"Bearer ",
        b"Bearer\tims_live_x",
        b"Basic YWJjOmRlZg==",
        b"Token abc",
        "Bearer\u00a0abc".encode(),
        b"\xe9\xe9 abc",
    ]
    invalid = [
        b"Bearer ims_live_short",
        b"bearer ims_test_" + b"A" * 40,
        b"BEARER  ims_live_" + b"b" * 40,
        b"Bearer a b c",
        b"Bearer ims_live_" + b"c" * 129,
        b"Bearer " + b"x" * 6000,
        b"Bearer ims_live_" + b"d" * 40 + b"%00",
        b"Bearer ims_live_" + b"=" * 40,
        b"Bearer ..\\..\\etc",
    ]
    for value, code in [(v, "unauthorized") for v in unauthorized] + [
        (v, "invalid_key") for v in invalid
    ]:
        answer = await exchange(
            system.base_url, request_bytes("GET", IDEAS, [(b"Authorization", value)])
        )
        assert answer.status == 401 and _error(answer)["code"] == code, value
    # Too long for the parser, or bytes it refuses: its own 400 or 431, not a 5xx.
    for value in (b"Bearer " + b"y" * 9000, b"Bearer ims_live_\x00abc", b"Bearer a\x7fb"):
        answer = await exchange(
            system.base_url, request_bytes("GET", IDEAS, [(b"Authorization", value)])
        )
        assert answer.status in (400, 401, 431), value


async def test_non_ascii_forwarded_headers_reach_the_service(system: System, ws: Workspace) -> None:
    """Header values that are not ASCII (UTF-8 or not) are forwarded safely: the call works."""
    odd = [(b"X-Note", b"caf\xe9"), (b"X-Other", "naïve ☃".encode()), (b"User-Agent", b"\xff\xfe")]
    for path in ("/api/v1/workspace", "/api/v1/export/ideas?limit=1", "/api/v1/automation/auth"):
        answer = await exchange(system.base_url, request_bytes("GET", path, [_auth(ws.key), *odd]))
        assert answer.status == 200, (path, answer.body[:300])
    created = await exchange(
        system.base_url,
        request_bytes(
            "POST",
            IDEAS,
            [_auth(ws.key), (b"Content-Type", b"application/json"), *odd],
            orjson.dumps({"title": "Header bytes"}),
        ),
    )
    assert created.status == 200 and created.json["data"]["title"] == "Header bytes"


async def test_non_ascii_idempotency_key_is_a_validation_error(
    system: System, ws: Workspace
) -> None:
    """An Idempotency-Key with bytes outside printable ASCII: 400 naming the header."""
    answer = await exchange(
        system.base_url,
        request_bytes(
            "POST",
            IDEAS,
            [
                _auth(ws.key),
                (b"Content-Type", b"application/json"),
                (b"Idempotency-Key", b"k\xe9y"),
            ],
            orjson.dumps({"title": "x"}),
        ),
    )
    assert answer.status == 400 and _error(answer)["field"] == "Idempotency-Key"


# ---- Content-Encoding of request bodies --------------------------------------------------


async def test_gzip_and_deflate_bodies_are_decoded(api: Api) -> None:
    """A body sent with Content-Encoding gzip or deflate is decoded like any other."""
    for encoding, encode in (
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("GZip", gzip.compress),
        ("identity", bytes),
    ):
        title = f"Compressed with {encoding}"
        body = encode(orjson.dumps({"title": title, "summary": "s" * 3000}))
        r = await api.post(
            IDEAS,
            body=body,
            headers={"Content-Encoding": encoding, "Content-Type": "application/json"},
        )
        assert r.status == 200, (encoding, r.body[:300])
        assert r.data["title"] == title and r.data["summary"] == "s" * 3000
        got = await api.get(f"{IDEAS}/{r.data['id']}")
        assert got.data["title"] == title


async def test_gzip_body_with_an_idempotency_key_is_replayed(api: Api) -> None:
    """The same decoded request replays, whichever way its body was compressed."""
    key = {"Idempotency-Key": uuid.uuid4().hex, "Content-Type": "application/json"}
    raw = orjson.dumps({"title": "Replayed gzip"})
    first = await api.post(
        IDEAS, body=gzip.compress(raw), headers={**key, "Content-Encoding": "gzip"}
    )
    again = await api.post(IDEAS, body=raw, headers=key)
    assert first.status == again.status == 200
    assert again.headers["Idempotent-Replayed"] == "true" and again.body == first.body


async def test_other_content_encodings_are_validation_errors(api: Api) -> None:
    """br, zstd, stacked or unknown encodings: 400 validation_error on Content-Encoding."""
    raw = orjson.dumps({"title": "Never created"})
    before = (await api.get(IDEAS, params={"search": "Never created"})).data
    for encoding in ("br", "zstd", "compress", "gzip, gzip", "x-unknown", "gzip;q=1"):
        r = await api.post(
            IDEAS,
            body=raw,
            headers={"Content-Encoding": encoding, "Content-Type": "application/json"},
        )
        assert r.status == 400, (encoding, r.status, r.body[:200])
        assert r.error["code"] == "validation_error" and r.error["field"] == "Content-Encoding"
    assert (await api.get(IDEAS, params={"search": "Never created"})).data == before


async def test_corrupt_or_oversized_compressed_bodies_are_4xx(api: Api) -> None:
    """A body that does not decode is 400; one that decodes past 1 MiB is 413: never a 500."""
    headers = {"Content-Type": "application/json"}
    for encoding, body in (
        ("gzip", b"not gzip at all"),
        ("deflate", b"\x00\x01garbage"),
        ("gzip", gzip.compress(b'{"title": "cut"}')[:-6]),
    ):
        r = await api.post(IDEAS, body=body, headers={**headers, "Content-Encoding": encoding})
        assert r.status == 400 and r.error["code"] in ("validation_error", "invalid_json"), (
            encoding,
            r.status,
            r.body[:200],
        )
    bomb = gzip.compress(b'{"title": "' + b"a" * (8 << 20) + b'"}')
    assert len(bomb) < 64 << 10
    r = await api.post(IDEAS, body=bomb, headers={**headers, "Content-Encoding": "gzip"})
    assert r.status == 413 and r.error["code"] == "validation_error"


# ---- Methods: 405 with Allow, HEAD on every GET --------------------------------------------


def _methods_by_path() -> dict[str, set[str]]:
    methods: dict[str, set[str]] = {}
    for route in ROUTE_TABLE:
        methods.setdefault(route.path, set()).add(route.method)
    return methods


async def test_every_405_lists_the_path_methods_in_allow(api: Api) -> None:
    """A known path with a wrong method: 405 method_not_allowed with Allow naming its methods."""
    for path, methods in _methods_by_path().items():
        allowed = methods | ({"HEAD"} if "GET" in methods else set())
        concrete = re.sub(r"\{\w+\}", lambda _: str(uuid.uuid4()), path)
        for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE"} - methods):
            r = await api.request(method, concrete, json={} if method != "GET" else None)
            assert r.status == 405 and r.error["code"] == "method_not_allowed", (method, path)
            assert {m.strip() for m in r.headers["Allow"].split(",")} == allowed, (method, path)
            assert all(h in r.headers for h in RATE)


async def test_open_paths_answer_405_with_allow(
    system: System, http: aiohttp.ClientSession
) -> None:
    """/healthz and the document refuse other methods with Allow too, on every process."""
    urls = [system.base_url + "/api/v1/openapi.json"] + [
        f"http://127.0.0.1:{port}/healthz" for ports in system.ports.values() for port in ports
    ]
    for url in urls:
        async with http.delete(url) as r:
            assert r.status == 405, url
            assert {m.strip() for m in r.headers["Allow"].split(",")} == {"GET", "HEAD"}, url


def _concrete(route: Route, ids: dict[str, str]) -> str:
    for prefix, value in ids.items():
        if route.path.startswith(prefix + "/{id}"):
            return route.path.replace("{id}", value)
    return re.sub(r"\{\w+\}", lambda _: str(uuid.uuid4()), route.path)


async def test_every_get_route_answers_head(api: Api) -> None:
    """HEAD on each GET route: the GET's status and headers, no body."""
    idea = (await api.post(IDEAS, json={"title": "Headed"})).data["id"]
    customer = (await api.post("/api/v1/customers", json={"name": "Headco"})).data["id"]
    hook = (
        await api.post(
            "/api/v1/webhooks",
            json={"targetUrl": "https://127.0.0.1:9/hook", "events": ["idea.created"]},
        )
    ).data["id"]
    ids = {"/api/v1/ideas": idea, "/api/v1/customers": customer, "/api/v1/webhooks": hook}
    routes = [r for r in ROUTE_TABLE if r.method == "GET"] + [None]
    for route in routes:
        path = "/api/v1/openapi.json" if route is None else _concrete(route, ids)
        got = await api.get(path)
        head = await api.request("HEAD", path, check=False)
        assert head.status == got.status, (path, head.status, got.status)
        assert head.body == b"", path
        for name in ("Content-Type", "Content-Disposition", "RateLimit-Limit"):
            assert head.headers.get(name) == got.headers.get(name), (path, name)
        if "Content-Length" in got.headers:
            assert head.headers.get("Content-Length") == got.headers["Content-Length"], path
        if route is not None:
            assert all(h in head.headers for h in RATE), path


# ---- Metrics, Server header ----------------------------------------------------------------


async def test_metrics_are_not_public(
    api: Api, system: System, http: aiohttp.ClientSession
) -> None:
    """The public listener answers 404 on /metrics; the gateway's internal listener serves them."""
    for base in system.gateway_urls():
        for method in ("GET", "HEAD"):
            async with http.request(method, base + "/metrics") as r:
                assert r.status == 404, base
        async with http.get(base + "/metrics") as r:
            assert (await r.json())["error"]["code"] == "not_found"
    for i, base in enumerate(system.gateway_urls()):
        assert (await api.get("/api/v1/workspace", base_url=base)).status == 200
        async with http.get(system.metrics_url("gateway", i) + "/metrics") as r:
            assert r.status == 200 and r.content_type == "text/plain"
            text = await r.text()
        assert "ims_http_requests_total{" in text and 'process="gateway"' in text
        async with http.get(system.metrics_url("gateway", i) + "/api/v1/workspace") as r:
            assert r.status == 404


async def test_server_header_names_no_software(
    system: System, api: Api, http: aiohttp.ClientSession
) -> None:
    """No process says which server software (or version) it runs, whatever it answers."""
    seen: list[str] = []
    for svc in SERVICES:
        for port in system.ports[svc]:
            async with http.get(f"http://127.0.0.1:{port}/healthz") as r:
                seen.append(r.headers.get("Server", ""))
            # A request the HTTP parser refuses is answered by aiohttp itself.
            answer = await exchange(f"http://127.0.0.1:{port}", b"GET /\x01 HTTP/1.1\r\n\r\n")
            assert answer.status == 400
            seen.append(answer.headers.get("Server", ""))
    async with http.get(system.metrics_url("gateway", 0) + "/metrics") as r:
        seen.append(r.headers.get("Server", ""))
    for resp in (
        await api.get(IDEAS),
        await api.get("/api/v1/nowhere"),
        await api.get("/api/v1/export/ideas", params={"limit": 1}),
    ):
        seen.append(resp.headers.get("Server", ""))
    for value in seen:
        assert "aiohttp" not in value.lower() and "python" not in value.lower(), seen


# ---- Idempotent replays never reveal a secret again ----------------------------------------


async def test_replayed_webhook_creation_masks_the_secret(
    system: System, api: Api, ws: Workspace
) -> None:
    """A replay of POST /webhooks shows the secret masked, as any later read; none is stored."""
    key = {"Idempotency-Key": uuid.uuid4().hex}
    body = {"targetUrl": "https://127.0.0.1:9/replayed", "events": ["idea.created"]}
    first = await api.post("/api/v1/webhooks", json=body, headers=key)
    assert first.status == 200
    secret = first.data["secret"]
    assert secret.startswith("whsec_") and "*" not in secret
    listed = await api.get("/api/v1/webhooks")
    masked = next(s["secret"] for s in listed.data if s["id"] == first.data["id"])
    for base in system.gateway_urls():
        again: Resp = await api.post("/api/v1/webhooks", json=body, headers=key, base_url=base)
        assert again.status == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.data["secret"] == masked != secret
        assert {**again.data, "secret": secret} == first.data
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT response_body FROM gateway.idempotency_keys"
                " WHERE workspace_id = %s AND key = %s",
                (ws.id, key["Idempotency-Key"]),
            )
            stored = bytes(cur.fetchone()[0])
    finally:
        conn.close()
    assert secret.encode() not in stored and masked.encode() in stored
