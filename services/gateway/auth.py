"""Key authentication: bearer token -> active key of a workspace, looked up by hash, cached briefly.

A revoked key stops working within `KEY_CACHE_TTL_S` (2 s by default; the contract allows 5 s).

A token that cannot be a key (docs/running.md: `ims_live_` or `ims_test_` and 32 or more
base62 characters; more than 128 are not issued) is refused before it is hashed or looked up.
Lookups are cached in two bounded LRU caches: active keys (`KEY_CACHE_SIZE`) and unknown ones
(`KEY_NEGATIVE_CACHE_SIZE`), so that a flood of invented keys can only push other invented
keys out, never a key in use. An active key's entry answers for `KEY_CACHE_TTL_S`; after that
it is looked up again, and until then it is still known as a key (the gateway looks up a known
key even for an address that is past its unauthenticated window).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import TypeVar

import aiopg

from libs.api.keys import hash_key, is_key
from libs.api.plans import RATE_PER_MINUTE
from libs.common import db
from libs.common.caller import H_REQUEST_ID, Caller
from libs.common.errors import InvalidKey, Unauthorized

_V = TypeVar("_V")


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
    bucket: str  # the workspace's rate window
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


def key_digest(token: str) -> bytes:
    """The SHA-256 a key is stored under, or 401 invalid_key for a token that is no key."""
    if not is_key(token):
        raise InvalidKey()
    return hash_key(token)


class KeyStore:
    """Active keys by digest, looked up in the database and cached (see the module docstring).

    `cached` answers from memory only; `lookup` asks the database and remembers the answer.
    Both caches are `OrderedDict`s used as LRUs: a hit moves to the end, the oldest entry
    leaves at the front, each in O(1).
    """

    def __init__(
        self,
        pool: aiopg.Pool,
        ttl: float,
        internal_token: str,
        size: int = 10_000,
        negative_size: int = 10_000,
    ) -> None:
        self.pool, self.ttl, self.token = pool, ttl, internal_token
        self.size, self.negative_size = size, negative_size
        self._known: OrderedDict[bytes, tuple[float, KeyInfo]] = OrderedDict()
        self._unknown: OrderedDict[bytes, float] = OrderedDict()

    def cached(self, digest: bytes) -> KeyInfo | None:
        """The cached key, None when the cache does not know it (any more); 401 for a known
        unknown key. An expired entry stays (see `known`) until a lookup replaces it."""
        now = time.monotonic()
        hit = self._known.get(digest)
        if hit is not None:
            self._known.move_to_end(digest)
            return hit[1] if hit[0] > now else None
        expires = self._unknown.get(digest)
        if expires is not None:
            if expires > now:
                self._unknown.move_to_end(digest)
                raise InvalidKey()
            del self._unknown[digest]
        return None

    def known(self, digest: bytes) -> bool:
        """Whether this digest was an active key at its last lookup (however long ago)."""
        return digest in self._known

    async def lookup(self, digest: bytes) -> KeyInfo:
        """The active key with this digest from the database (then cached), or 401."""
        info = await self._load(digest)
        expires = time.monotonic() + self.ttl
        if info is None:
            self._known.pop(digest, None)
            _remember(self._unknown, digest, expires, self.negative_size)
            raise InvalidKey()
        _remember(self._known, digest, (expires, info), self.size)
        return info

    def forget_workspace(self, workspace_id: uuid.UUID) -> None:
        """Let the workspace's cached keys expire now (its settings changed): the next request
        of each looks it up again. They stay known (see `known`). O(cache size), for a rare
        change."""
        stale = [
            (d, info) for d, (_, info) in self._known.items() if info.workspace_id == workspace_id
        ]
        for digest, info in stale:
            self._known[digest] = (0.0, info)

    async def _load(self, digest: bytes) -> KeyInfo | None:
        async with db.cursor(self.pool) as cur:
            row = await db.fetchone(
                cur,
                """
                SELECT k.id, k.name, k.kind, k.scopes, w.id AS workspace_id, w.name AS workspace_name,
                       w.plan, w.inbox_mode, w.rate_limit_per_minute, w.short_code, w.slug,
                       w.default_destination, w.public_submission_enabled
                  FROM gateway.api_keys k JOIN gateway.workspaces w ON w.id = k.workspace_id
                 WHERE k.key_hash = %s AND k.revoked_at IS NULL""",
                (digest,),
            )
        if row is None:
            return None
        scopes = frozenset(row["scopes"])
        # Built once per cache fill, not per request: the gateway's hot path stays short.
        who = Caller(
            workspace_id=row["workspace_id"],
            workspace_name=row["workspace_name"],
            plan=row["plan"],
            inbox_mode=row["inbox_mode"],
            key_id=row["id"],
            key_name=row["name"],
            scopes=scopes,
            request_id="",
            short_code=row["short_code"],
            slug=row["slug"],
            default_destination=row["default_destination"],
            public_submission=row["public_submission_enabled"],
        )
        internal = who.headers(self.token)
        del internal[H_REQUEST_ID]
        return KeyInfo(
            key_id=row["id"],
            key_name=row["name"],
            kind=row["kind"],
            scopes=scopes,
            workspace_id=row["workspace_id"],
            workspace_name=row["workspace_name"],
            plan=row["plan"],
            inbox_mode=row["inbox_mode"],
            rate_limit=row["rate_limit_per_minute"] or RATE_PER_MINUTE[row["plan"]],
            bucket=f"ws:{row['workspace_id']}",
            internal_headers=internal,
        )


def _remember(cache: OrderedDict[bytes, _V], digest: bytes, value: _V, size: int) -> None:
    cache[digest] = value
    cache.move_to_end(digest)
    while len(cache) > size:
        cache.popitem(last=False)
