"""Key authentication: bearer token -> active key of a workspace, looked up by hash, cached briefly.

A revoked key stops working within `KEY_CACHE_TTL_S` (2 s by default; the contract allows 5 s).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass

import aiopg

from libs.common import db
from libs.common.caller import H_REQUEST_ID, Caller
from libs.common.errors import InvalidKey, Unauthorized
from libs.api.plans import RATE_PER_MINUTE

_CACHE_MAX = 50_000


@dataclass(frozen=True)
class KeyInfo:
    key_id: uuid.UUID
    key_name: str
    kind: str
    scopes: frozenset[str]
    workspace_id: uuid.UUID
    workspace_name: str
    plan: str
    inbox_mode: str
    rate_limit: int
    bucket: str                     # the workspace's rate window
    internal_headers: dict[str, str]  # the caller as services get it, without the request id


def bearer_token(header: str | None) -> str:
    """The token of `Authorization: Bearer <token>`, or 401 unauthorized."""
    if not header:
        raise Unauthorized("Authorization header is missing")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("Authorization header must be 'Bearer <API key>'")
    return token


class KeyStore:
    def __init__(self, pool: aiopg.Pool, ttl: float, internal_token: str) -> None:
        self.pool, self.ttl, self.token = pool, ttl, internal_token
        self._cache: dict[bytes, tuple[float, KeyInfo | None]] = {}

    async def authenticate(self, token: str) -> KeyInfo:
        digest = hashlib.sha256(token.encode()).digest()
        now = time.monotonic()
        hit = self._cache.get(digest)
        if hit is not None and hit[0] > now:
            info = hit[1]
        else:
            info = await self._load(digest)
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[digest] = (now + self.ttl, info)
        if info is None:
            raise InvalidKey()
        return info

    async def _load(self, digest: bytes) -> KeyInfo | None:
        async with db.cursor(self.pool) as cur:
            row = await db.fetchone(cur, """
                SELECT k.id, k.name, k.kind, k.scopes, w.id AS workspace_id, w.name AS workspace_name,
                       w.plan, w.inbox_mode, w.rate_limit_per_minute
                  FROM gateway.api_keys k JOIN gateway.workspaces w ON w.id = k.workspace_id
                 WHERE k.key_hash = %s AND k.revoked_at IS NULL""", (digest,))
        if row is None:
            return None
        scopes = frozenset(row["scopes"])
        # Built once per cache fill, not per request: the gateway's hot path stays short.
        who = Caller(workspace_id=row["workspace_id"], workspace_name=row["workspace_name"],
                     plan=row["plan"], inbox_mode=row["inbox_mode"], key_id=row["id"],
                     key_name=row["name"], scopes=scopes, request_id="")
        internal = who.headers(self.token)
        del internal[H_REQUEST_ID]
        return KeyInfo(
            key_id=row["id"], key_name=row["name"], kind=row["kind"],
            scopes=scopes, workspace_id=row["workspace_id"],
            workspace_name=row["workspace_name"], plan=row["plan"], inbox_mode=row["inbox_mode"],
            rate_limit=row["rate_limit_per_minute"] or RATE_PER_MINUTE[row["plan"]],
            bucket=f"ws:{row['workspace_id']}", internal_headers=internal,
        )
