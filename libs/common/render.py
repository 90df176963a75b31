"""The one JSON rendering of every response body, export and event payload (docs/api.md).

- Compact: no white space between tokens.
- Keys in the order the OpenAPI document lists them: objects are built in that order (Python
  dicts keep insertion order; SQL builds rows of composite types, whose attribute order is the
  key order).
- Every date-time is UTC written `YYYY-MM-DDTHH:MM:SS.ffffffZ` (six fractional digits, `Z`).
  `timestamp` renders one in Python; the SQL function `public.ims_json_ts(timestamptz)`
  (migration `libs/common/migrations/render.sql`) renders it the same way inside PostgreSQL,
  where JSON is built for speed. A date (an analytics bucket) is `YYYY-MM-DD`.
- Money (`numeric`) is a JSON number in its shortest exact form: a whole amount without a
  fraction (`50000`), others with the digits they have (`1234.5`); SQL uses `trim_scale`.

JSON text built by PostgreSQL goes into a body as an `orjson.Fragment`, without re-parsing.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import orjson

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS


def timestamp(value: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS.ffffffZ` in UTC; a naive value is taken as UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds") + "Z"


def money(value: Decimal | float | int | None) -> int | float | None:
    """An amount as a JSON number: whole amounts as integers, others as their double."""
    if value is None:
        return None
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return money(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def dumps(data: Any) -> bytes:
    """The body of `data`: compact, date-times in the one form."""
    return orjson.dumps(data, default=_default, option=_OPTIONS)


def fragment(text: str | bytes | None) -> orjson.Fragment | None:
    """JSON text built by PostgreSQL, embedded in a body as it is (None stays null)."""
    return None if text is None else orjson.Fragment(text)
