"""`Idempotency-Key` on POST (docs/gateway.md): the first request runs, repeats replay it.

The key is claimed with an insert (`in_flight`); a concurrent repeat finds the claim and gets
409, whichever gateway replica it reaches. The finished answer is stored unless it is a 5xx
(then the claim is dropped, so the client may retry). A secret in the answer (the route's
`secret_fields`) is stored masked: the replay shows it as any later read does.

An answer is kept for storing up to `STORE_LIMIT` bytes while it is relayed. No answer the
contract describes comes near it (the largest, a batch of 100 ideas, stays under 3 MiB); one
that is larger, or that broke off, is not stored and frees the key, as a 5xx does.
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

from libs.common import db
from libs.common.errors import Conflict, ValidationFailed
from libs.common.masking import mask_fields

from .proxy import Relayed

HEADER = "Idempotency-Key"
STORE_LIMIT = 8 << 20
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


def request_hash(method: str, path: str, body: bytes) -> bytes:
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).digest()


async def run_once(
    pool: aiopg.Pool,
    workspace_id: uuid.UUID,
    key: str,
    fingerprint: bytes,
    extra_headers: dict[str, str],
    call: Callable[[int], Awaitable[Relayed]],
    secret_fields: tuple[str, ...] = (),
) -> web.StreamResponse:
    """Run `call` (which relays the request, keeping up to the bytes it is given) once per key."""
    async with db.cursor(pool) as cur:
        # An expired record (older than 24 h) is as good as none; so is a claim whose
        # gateway died mid-request (no request lives 5 minutes: the proxy reads time out).
        await cur.execute(
            "DELETE FROM gateway.idempotency_keys WHERE workspace_id = %s AND key = %s"
            " AND (created_at < now() - interval '24 hours'"
            "      OR (state = 'in_flight' AND created_at < now() - interval '5 minutes'))",
            (workspace_id, key),
        )
        await cur.execute(
            "INSERT INTO gateway.idempotency_keys (workspace_id, key, request_hash, state)"
            " VALUES (%s, %s, %s, 'in_flight') ON CONFLICT DO NOTHING",
            (workspace_id, key, psycopg2.Binary(fingerprint)),
        )
        claimed = cur.rowcount == 1
        if not claimed:
            row = await db.fetchone(
                cur,
                """
                SELECT request_hash, state, response_status, response_headers, response_body
                  FROM gateway.idempotency_keys WHERE workspace_id = %s AND key = %s""",
                (workspace_id, key),
            )
    if not claimed:
        return _replay(row, fingerprint, extra_headers)
    try:
        relayed = await call(STORE_LIMIT)
    except BaseException:
        await asyncio.shield(_release(pool, workspace_id, key))
        raise
    response = relayed.response
    if response.status >= 500 or relayed.body is None:
        if relayed.body is None:
            log.warning("idempotent_answer_not_stored", status=response.status)
        await _release(pool, workspace_id, key)
        return response
    # Pairs, not a dict: a header may repeat, and multidict's keys are not plain strings.
    stored = [[str(k), v] for k, v in response.headers.items() if k.lower() not in _REPLAY_DROP]
    body = _masked(relayed.body, secret_fields) if response.status < 300 else relayed.body
    try:
        async with db.cursor(pool) as cur:
            await cur.execute(
                """
                UPDATE gateway.idempotency_keys SET state = 'done', response_status = %s,
                       response_headers = %s, response_body = %s
                 WHERE workspace_id = %s AND key = %s""",
                (
                    response.status,
                    orjson.dumps(stored).decode(),
                    psycopg2.Binary(body),
                    workspace_id,
                    key,
                ),
            )
    except BaseException:
        # The answer happened but could not be kept: free the key rather than leave it
        # in flight for a day; the client still gets the answer.
        await asyncio.shield(_release(pool, workspace_id, key))
        raise
    return response


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


async def _release(pool: aiopg.Pool, workspace_id: uuid.UUID, key: str) -> None:
    async with db.cursor(pool) as cur:
        await cur.execute(
            "DELETE FROM gateway.idempotency_keys WHERE workspace_id = %s AND key = %s",
            (workspace_id, key),
        )
