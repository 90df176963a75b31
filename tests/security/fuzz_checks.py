"""Schemathesis checks of this API, loaded by the fuzz run (`hooks` in schemathesis.toml).

`positive_data_acceptance` expects every request the document calls valid to be accepted. A few
refusals are decided by the contract, or by a decision written in docs/ where the contract is
silent, on facts a JSON Schema cannot state (a signature, another parameter, a stored count, a
product of fields). `positive_data_acceptance_by_contract` runs the stock check and lets through
only those refusals, each recognised by its status, code, field and message, so that any other
refusal of valid data still fails the run.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import schemathesis
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

RICE_FIELDS = ("riceReach", "riceImpact", "riceConfidence", "riceEffort")


def _error(response: Any) -> dict[str, Any]:
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def decided_by_contract(status: int, error: dict[str, Any]) -> bool:
    """Whether a refusal of schema-valid data is one the contract (or docs/api.md) decides."""
    code, field = error.get("code"), error.get("field")
    message = str(error.get("message", ""))
    if status == 422:
        # docs/webhooks.md: the 11th webhook subscription is refused; the fuzzer creates many.
        return code == "limit_exceeded"
    if status != 400 or code != "validation_error":
        return False
    if "date-time out of range" in message:
        # docs/api.md: a date-time whose UTC value falls outside years 1 to 9999 (an offset can
        # move a schema-valid `0001-01-01T01:00:00+12:47` before the year 1).
        return True
    if field == "cursor":
        # docs/api.md: a cursor is opaque and signed; one this service did not issue is refused.
        return True
    if field in ("start", "end") and ("after end" in message or "exceeds 2 years" in message):
        # docs/analytics.md: start after end, or a range over 2 years.
        return True
    if field in ("start", "end") and ("out of range" in message or "too early" in message):
        # docs/analytics.md: a range reaching before the year 1 (a default start 90 days
        # before an `end` in January of the year 1, or an offset that moves it there).
        return True
    if field in ("targetUrl", "hookUrl"):
        # docs/webhooks.md and 11: a host that is not a valid DNS name or IP address, or an address
        # that is not public, is refused at creation; `pattern` can only say "https://".
        return True
    if field in RICE_FIELDS and "not be a finite number" in message:
        # docs/api.md: RICE inputs whose score would overflow a double.
        return True
    if field == "closureCategory" and "only with a change of status" in message:
        # docs/ideas.md: closureCategory comes only with a change to a decided status, which
        # depends on the idea's stored status.
        return True
    if field == "parentId" and "own ancestor" in message:
        # docs/ideas.md: a product moved under itself or one of its descendants (stored tree).
        return True
    if field == "parentId" and "one level deep" in message:
        # docs/ideas.md: a reply to a reply (a stored comment's parent decides).
        return True
    if field == "detectedAt" and "in the future" in message:
        # docs/ideas.md: a signal's detectedAt is not in the future (the clock decides).
        return True
    if field == "userId" and "not both" in message:
        # docs/ideas.md: a vote (or its removal) names either `voter` or `userId`.
        return True
    if field == "voter" and "send userId instead" in message:
        # docs/ideas.md: a voter written `user:<uuid>` is a user's, made by `userId` alone.
        return True
    if field == "externalId" and "one of externalId or email" in message:
        # docs/customers.md: identify needs `externalId` or `email` (null for both is schema-valid).
        return True
    if field == "metadata" and "cannot be stored" in message:
        # docs/customers.md: an integer beyond 64 bits in metadata.
        return True
    # docs/api.md: PostgreSQL text cannot hold U+0000, so strings holding it are refused.
    return "U+0000" in message


@schemathesis.check
def positive_data_acceptance_by_contract(ctx: Any, response: Any, case: Any) -> bool | None:
    """positive_data_acceptance, less the refusals the contract decides (see module doc)."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if decided_by_contract(response.status_code, _error(response)):
            return None
        raise


@schemathesis.hook("map_headers")
def unique_idempotency_keys(ctx: Any, headers: dict[str, Any] | None) -> dict[str, Any] | None:
    """Make each printable `Idempotency-Key` unique to its request: the document's example (and
    short generated keys) would otherwise repeat across unrelated POSTs, and the contract makes
    a repeat replay the first answer (a resource created and deleted long ago). Keys that are
    not printable are left as generated, so their refusal is still fuzzed."""
    key = (headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and key.isascii() and key.isprintable():
        headers = dict(headers or {})
        headers["Idempotency-Key"] = f"{key[:200]}-{uuid.uuid4().hex}"
    return headers
