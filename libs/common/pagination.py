"""Keyset pagination: signed cursors bound to the sort, order and filters they were issued for.

A cursor carries the last row's sort value and id. It is HMAC-signed, so it cannot be forged,
and it records a digest of the listing's scope (sort, order, filters), so it is refused with
another listing. Both failures are `validation_error` on `cursor`.

`secrets` is CURSOR_SECRET's values: the first signs, every one verifies, so that the secret
can be replaced without refusing the cursors clients hold (SECURITY.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .errors import ValidationFailed

DEFAULT_LIMIT = 25
MAX_LIMIT = 100


# The `cursor` query parameter of every paginated list: an empty `cursor=` is the same as none
# (docs/api.md), so a client may pass `nextCursor` back without checking it first.
CursorParam = Annotated[
    str | None,
    BeforeValidator(lambda value: value or None),
    Field(description="`nextCursor` of the previous page; absent or empty for the first page"),
]


def scope_digest(scope: dict[str, Any]) -> str:
    """A short digest of what a cursor is valid for (sort, order, filters)."""
    blob = orjson.dumps(scope, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(blob).hexdigest()[:16]


def _sign(secret: str, payload: bytes) -> bytes:
    return hmac.new(secret.encode(), payload, hashlib.sha256).digest()[:16]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


Secrets = tuple[str, ...]


def encode_cursor(secrets: Secrets, scope: dict[str, Any], values: list[Any]) -> str:
    """`values`: the last row's keyset (e.g. [sort value, id]); datetimes and UUIDs as text."""
    payload = orjson.dumps({"s": scope_digest(scope), "v": values}, default=str)
    return _b64(payload) + "." + _b64(_sign(secrets[0], payload))


def decode_cursor(secrets: Secrets, token: str, scope: dict[str, Any]) -> list[Any]:
    """The keyset values of a cursor issued for this `scope`, or `validation_error`."""
    try:
        body, sig = token.split(".", 1)
        payload, given = _unb64(body), _unb64(sig)
        good = sum(hmac.compare_digest(given, _sign(s, payload)) for s in secrets) > 0
        data = orjson.loads(payload) if good else None
    except (ValueError, orjson.JSONDecodeError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("v"), list):
        raise ValidationFailed("cursor is not valid", field="cursor")
    if data.get("s") != scope_digest(scope):
        raise ValidationFailed(
            "cursor does not belong to this sort, order and filters", field="cursor"
        )
    return list(data["v"])


R = TypeVar("R")


def page_tail(
    rows: Sequence[R],
    limit: int,
    secrets: Secrets,
    scope: dict[str, Any],
    keyset: Callable[[R], list[Any]],
) -> tuple[list[R], str | None, bool]:
    """A keyset page of `rows` fetched with `LIMIT limit + 1`: its first `limit` rows, the
    cursor after the last of them when more follow (else None), and whether more follow."""
    has_more = len(rows) > limit
    page = list(rows[:limit])
    cursor = encode_cursor(secrets, scope, keyset(page[-1])) if has_more else None
    return page, cursor, has_more


def page_info(
    limit: int, has_more: bool, next_cursor: str | None, total: int | None = None
) -> dict[str, Any]:
    info: dict[str, Any] = {
        "limit": limit,
        "hasMore": has_more,
        "nextCursor": next_cursor if has_more else None,
    }
    if total is not None:
        info["total"] = total
    return info


class Pagination(BaseModel):
    """Where a page ends: pass `nextCursor` as `cursor`, with the same sort, order and filters,
    for the next page."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    limit: int
    """The page size asked for (or the default)"""
    hasMore: bool
    """Whether records follow this page"""
    nextCursor: str | None
    """The `cursor` of the next page; null on the last page"""


class PaginationWithTotal(Pagination):
    """Pagination plus `total`: every record matching the filters."""

    total: int
    """How many records match the filters, on all pages together"""
