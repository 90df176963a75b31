"""`Idempotency-Key` on POST (docs/gateway.md): the first request runs, repeats replay it.

Only a POST that changes state is kept (`stores`): a read-only one (`Route.read_only`, and an
MCP message other than a call of a tool whose route changes state) runs every time, its
key checked and otherwise ignored: a repeat reads afresh, and its answer, which may be large,
is never stored.

The key is claimed with an insert (`in_flight`) under (workspace, API key, idempotency key); a
concurrent repeat finds the claim and gets 409, whichever gateway replica it reaches. The
finished answer is stored unless it is a 5xx (then the claim is dropped, so the client may
retry). A secret in the answer (the route's `secret_fields`) is stored masked: the replay shows
it as any later read does.

An answer is kept for storing up to `IDEMPOTENCY_MAX_STORED_BYTES` (2 MiB) while it is
relayed: the largest state-changing answer, a batch of 100 ideas as large as a 1 MiB request
allows, is 1,130,426 bytes (tests/gateway/test_idempotency_ideas.py). One that is larger, or
that broke off, is relayed but not stored, and frees the key, as a 5xx does. A streamed answer
is stored (or its key freed) before its last chunk leaves: a client holding the whole answer
that repeats it at once gets the replay, not "in progress".
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable

import aiopg
import orjson
import psycopg2
import structlog
from aiohttp import web
from multidict import CIMultiDict

from libs.api.route import Route
from libs.api.table import ROUTE_TABLE
from libs.common import db
from libs.common.errors import Conflict, ValidationFailed
from libs.common.masking import mask_fields

from .proxy import Keep, Relayed

HEADER = "Idempotency-Key"
# Records stored before they were kept per API key (migration 0003): any key of their
# workspace finds them, until they expire.
LEGACY_KEY_ID = uuid.UUID(int=0)
# MCP tools whose route changes nothing: a call of one is a read.
READ_TOOLS = frozenset(
    r.tool.name for r in ROUTE_TABLE if r.tool is not None and (r.method == "GET" or r.read_only)
)
log = structlog.get_logger("idempotency")
# Per-request headers, and the framing of the first answer (a replay is framed anew).
_REPLAY_DROP = frozenset(
    {
        "x-request-id",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "retry-after",
        "content-length",
        "transfer-encoding",
        "connection",
        "date",
        "server",
        # the body is kept plain: the replay is compressed (or not) afresh
        "content-encoding",
    }
)


def check_key(key: str) -> str:
    if not 1 <= len(key) <= 255 or not all(32 <= ord(c) < 127 for c in key):
        raise ValidationFailed(
            "Idempotency-Key must be 1 to 255 printable characters", field="Idempotency-Key"
        )
    return key


def stores(route: Route, body: bytes | None) -> bool:
    """Whether a POST to `route` with `body` changes state, so that its answer is stored for
    its Idempotency-Key. A JSON-RPC message is read-only unless it is a `tools/call`; a call
    of a tool known to read is read-only; anything else (another tool, a batch, a body that is
    not JSON) is stored, as a state-changing POST: when in doubt, keep the answer."""
    if route.read_only:
        return False
    if not route.tool_calls:
        return True
    try:
        message = orjson.loads(body or b"")
    except orjson.JSONDecodeError:
        return True
    if not isinstance(message, dict):
        return True
    if message.get("method") != "tools/call":
        return False
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return not (isinstance(name, str) and name in READ_TOOLS)


def request_hash(method: str, path: str, body: bytes) -> bytes:
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).digest()


async def run_once(
    pool: aiopg.Pool,
    workspace_id: uuid.UUID,
    key_id: uuid.UUID,
    key: str,
    fingerprint: bytes,
    extra_headers: dict[str, str],
    call: Callable[[Keep], Awaitable[Relayed]],
    max_stored: int,
    secret_fields: tuple[str, ...] = (),
) -> web.StreamResponse:
    """Run `call` (which relays the request, keeping what `Keep` asks) once per (workspace, API
    key, idempotency key); store its answer when it is at most `max_stored`, before the client
    has all of it: a repeat sent the moment the answer ended is a replay, never a 409."""
    ids = {"ws": workspace_id, "kid": key_id, "legacy": LEGACY_KEY_ID, "key": key}
    async with db.cursor(pool) as cur:
        # An expired record (older than 24 h) is as good as none; so is a claim whose
        # gateway died mid-request (no request lives 5 minutes: the proxy reads time out).
        await cur.execute(
            "DELETE FROM gateway.idempotency_keys"
            " WHERE workspace_id = %(ws)s AND key_id IN (%(kid)s, %(legacy)s) AND key = %(key)s"
            " AND (created_at < now() - interval '24 hours'"
            "      OR (state = 'in_flight' AND created_at < now() - interval '5 minutes'))",
            ids,
        )
        await cur.execute(
            "INSERT INTO gateway.idempotency_keys (workspace_id, key_id, key, request_hash, state)"
            " SELECT %(ws)s, %(kid)s, %(key)s, %(hash)s, 'in_flight'"
            "  WHERE NOT EXISTS (SELECT 1 FROM gateway.idempotency_keys"
            "   WHERE workspace_id = %(ws)s AND key_id = %(legacy)s AND key = %(key)s)"
            " ON CONFLICT DO NOTHING",
            {**ids, "hash": psycopg2.Binary(fingerprint)},
        )
        claimed = cur.rowcount == 1
        if not claimed:
            row = await db.fetchone(
                cur,
                """
                SELECT request_hash, state, response_status, response_headers, response_body
                  FROM gateway.idempotency_keys
                 WHERE workspace_id = %(ws)s AND key_id IN (%(kid)s, %(legacy)s)
                   AND key = %(key)s
                 ORDER BY key_id = %(legacy)s LIMIT 1""",
                ids,
            )
    if not claimed:
        return _replay(row, fingerprint, extra_headers)

    async def settle(response: web.StreamResponse, body: bytes | None) -> None:
        await _settle(pool, ids, response, body, max_stored, secret_fields)

    try:
        relayed = await call(Keep(max_stored, settle))
    except BaseException:
        await asyncio.shield(_release(pool, ids))
        raise
    if not relayed.settled:
        await settle(relayed.response, relayed.body)
    return relayed.response


async def _settle(
    pool: aiopg.Pool,
    ids: dict[str, object],
    response: web.StreamResponse,
    body: bytes | None,
    max_stored: int,
    secret_fields: tuple[str, ...],
) -> None:
    """Store the finished answer; or, for a 5xx, an answer over the limit or one that broke off,
    free the key, so that the client may retry."""
    if response.status >= 500 or body is None or len(body) > max_stored:
        if response.status < 500:
            log.warning(
                "idempotent_answer_not_stored",
                status=response.status,
                reason="broke off" if body is None else "over the limit",
            )
        await asyncio.shield(_release(pool, ids))
        return
    # Pairs, not a dict: a header may repeat, and multidict's keys are not plain strings.
    stored = [[str(k), v] for k, v in response.headers.items() if k.lower() not in _REPLAY_DROP]
    if response.status < 300:
        body = _masked(body, secret_fields)
    try:
        async with db.cursor(pool) as cur:
            await cur.execute(
                """
                UPDATE gateway.idempotency_keys SET state = 'done', response_status = %(status)s,
                       response_headers = %(headers)s, response_body = %(body)s
                 WHERE workspace_id = %(ws)s AND key_id = %(kid)s AND key = %(key)s""",
                {
                    **ids,
                    "status": response.status,
                    "headers": orjson.dumps(stored).decode(),
                    "body": psycopg2.Binary(body),
                },
            )
    except Exception as err:
        # The answer happened but could not be kept: free the key rather than leave it in
        # flight for a day; the client still gets the answer.
        log.warning("idempotent_answer_not_stored", status=response.status, error=repr(err))
        await asyncio.shield(_release(pool, ids))
    except BaseException:
        await asyncio.shield(_release(pool, ids))
        raise


def _masked(body: bytes, secret_fields: tuple[str, ...]) -> bytes:
    if not secret_fields:
        return body
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    return orjson.dumps(document) if mask_fields(document, secret_fields) else body


def _replay(row: dict | None, fingerprint: bytes, extra: dict[str, str]) -> web.Response:
    if row is None:  # released between our insert and select: treat as in flight
        raise Conflict("A request with this Idempotency-Key is in progress")
    if bytes(row["request_hash"]) != fingerprint:
        raise Conflict("Idempotency-Key was already used with a different request")
    if row["state"] != "done":
        raise Conflict("A request with this Idempotency-Key is in progress")
    headers = CIMultiDict((k, v) for k, v in orjson.loads(row["response_headers"] or "[]"))
    headers.update(extra)
    headers["Idempotent-Replayed"] = "true"
    return web.Response(
        status=row["response_status"], headers=headers, body=bytes(row["response_body"] or b"")
    )


async def _release(pool: aiopg.Pool, ids: dict[str, object]) -> None:
    async with db.cursor(pool) as cur:
        await cur.execute(
            "DELETE FROM gateway.idempotency_keys"
            " WHERE workspace_id = %(ws)s AND key_id = %(kid)s AND key = %(key)s",
            ids,
        )
