"""Request validation: pydantic models are the one source of truth for checks and OpenAPI schemas.

Bodies are validated in strict JSON mode (no type coercion; unknown properties refused when the
model forbids extras). Query strings are validated in lax mode, since every value arrives as a
string, except date-times: pydantic's lax parsing takes `0.5` or `1700000000` for a Unix time
and `2024-01-01` for midnight, so `UtcDateTime` first checks the RFC 3339 form
(docs/api.md). The first error becomes `validation_error` with `field` naming the offender, nested
as `ideas[3].title`.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

import orjson
from aiohttp import web
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .errors import InvalidJson, NotFound, PayloadTooLarge, ValidationFailed

M = TypeVar("M", bound=BaseModel)

MAX_BODY = 1024 * 1024


class Body(BaseModel):
    """Base of request bodies: unknown properties are a validation error."""

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class Query(BaseModel):
    """Base of query-parameter models: unknown parameters are a validation error."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


def _plus_back(value: Any) -> Any:
    # An unencoded '+' in a query string decodes to a space; '2024-01-01T00:00:00 00:00' is
    # what a client meant as '+00:00'.
    if isinstance(value, str):
        return value.replace(" ", "+")
    return value


# RFC 3339 section 5.6 `date-time`: full date, `T`, full time with optional fraction, and an
# offset (`Z` or +hh:mm). The ranges of each part are left to the datetime parser.
RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})"
)


def _rfc3339(value: Any) -> Any:
    value = _plus_back(value)
    if not isinstance(value, str) or not RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 date-time such as 2024-01-31T12:00:00Z")
    return value


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+05:00 lies before year 1 in UTC
        raise ValueError("date-time out of range") from None


# A date-time query parameter: RFC 3339 only (a number or a bare date is refused), in UTC.
UtcDateTime = Annotated[
    datetime,
    BeforeValidator(_rfc3339),
    AfterValidator(_utc),
    Field(
        description="An RFC 3339 date-time with an offset, e.g. 2024-01-31T12:00:00Z; a number or "
        "a bare date is refused"
    ),
]


def loc_to_field(loc: tuple[int | str, ...]) -> str:
    """('ideas', 3, 'title') -> 'ideas[3].title'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def _first_error(err: ValidationError, *, prefix: str = "") -> ValidationFailed:
    e = err.errors(include_url=False)[0]
    loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    field = loc_to_field(loc)
    if prefix and field == "body":
        field = prefix
    kind = e["type"]
    if kind == "extra_forbidden":
        message = f"Unknown property: {field}" if not prefix else f"Unknown parameter: {field}"
    elif kind == "missing":
        message = f"{field} is required"
    else:
        message = f"{field}: {e['msg']}"
    return ValidationFailed(message, field=field)


def validation_failure(err: ValidationError) -> ValidationFailed:
    """The `validation_error` for a model's first failure, `field` named as in a body."""
    return _first_error(err)


async def read_body(request: web.Request) -> bytes:
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as err:
        raise PayloadTooLarge() from err


async def parse_body(request: web.Request, model: type[M], *, optional: bool = False) -> M:
    """Validate the JSON body against `model`; an empty body is `{}` when `optional`."""
    raw = await read_body(request)
    if not raw.strip():
        if optional:
            return model()
        raise ValidationFailed("Request body is required", field="body")
    return validate_json(raw, model)


def validate_json(raw: bytes, model: type[M]) -> M:
    try:
        parsed = model.model_validate_json(raw, strict=True)
    except ValidationError as err:
        if err.errors()[0]["type"] == "json_invalid":
            raise InvalidJson() from err
        raise _first_error(err) from err
    if b"\\u0000" in raw:  # cheap pre-check; the walk below finds the field
        _refuse_nul(parsed, ())
    return parsed


def _refuse_nul(value: Any, loc: tuple[int | str, ...]) -> None:
    """PostgreSQL text cannot hold U+0000: refuse it as a validation error, never a 500."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValidationFailed(
                f"{loc_to_field(loc)}: must not contain U+0000", field=loc_to_field(loc)
            )
    elif isinstance(value, BaseModel):
        for name in value.model_fields_set:
            _refuse_nul(getattr(value, name), (*loc, name))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _refuse_nul(item, (*loc, n))
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_nul(key, loc)
            _refuse_nul(item, loc)


def parse_query(request: web.Request, model: type[M]) -> M:
    """Validate the query string against `model` (each parameter at most once)."""
    values: dict[str, str] = {}
    for key, value in request.query.items():
        if key in values:
            raise ValidationFailed(f"Parameter {key} given more than once", field=key)
        if "\x00" in value:
            raise ValidationFailed(f"{key}: must not contain U+0000", field=key)
        values[key] = value
    try:
        return model.model_validate(values)
    except ValidationError as err:
        raise _first_error(err, prefix="query") from err


def path_uuid(request: web.Request, name: str = "id") -> uuid.UUID:
    """A `{id}` path parameter that is not a UUID names nothing: 404."""
    try:
        return uuid.UUID(request.match_info[name])
    except (KeyError, ValueError) as err:
        raise NotFound() from err


def stored_json_size(value: Any) -> int:
    """Bytes of `value` as the compact UTF-8 JSON text it is stored as. `ValueError` when it
    cannot be stored at all (an integer beyond 64 bits, say)."""
    try:
        return len(orjson.dumps(value))
    except orjson.JSONEncodeError as err:
        raise ValueError("cannot be stored (integers must fit in 64 bits)") from err


def _integral(value: Any) -> Any:
    """JSON has one number type: `3600.0` is an integer to JSON Schema, so a body's integer
    field takes it (strict mode would refuse it); `3600.5` stays a float and is refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# An integer field of a request body (bodies are validated strictly).
JsonInt = Annotated[int, BeforeValidator(_integral)]
