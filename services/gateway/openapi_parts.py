"""The parts of the OpenAPI document that every operation shares, and the `webhooks` section.

Errors, headers and the idempotency key are declared once as components and referred to from
every operation they apply to (see `openapi.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from libs.api.webhooks.events import EVENT_MODELS, EVENTS, NewIdeaPayload

INFO: dict[str, Any] = {
    "title": "Idea Management Service API",
    "version": "1.1.0",
    "summary": "Ideas, votes, RICE, customers, roadmap, analytics, exports and signed webhooks.",
    "description": (
        "Capture product ideas from anywhere, vote on them, score them with RICE, link the "
        "customers and revenue behind them, decide, plan them on a roadmap, read analytics, "
        "export, and receive every change as a signed webhook.\n\n"
        "Every call takes an API key as a bearer token (`Authorization: Bearer ims_live_…`); "
        "each operation says which scope it needs. Lists are keyset pages: pass "
        "`pagination.nextCursor` as `cursor` for the next one. Errors are "
        '`{"error": {"code", "message", "field"?}}`. Date-times are UTC, written '
        "`YYYY-MM-DDTHH:MM:SS.ffffffZ`. Rate limits are counted per workspace over 60 seconds "
        "and reported in the `RateLimit-*` headers of every answer. Any POST may carry an "
        "`Idempotency-Key` to be retried safely. Every GET operation also answers HEAD: the same "
        "status and headers, without the body. A request body may be sent with "
        "`Content-Encoding: gzip` or `deflate`; it is decoded before it is read, and its decoded "
        "size counts against the 1 MiB limit (another encoding is a `validation_error` on "
        "`Content-Encoding`).\n\n"
        "A reference page rendered from this document is served at `/docs`. "
        "Conventions and decisions: the project's docs/api.md."
    ),
}

SECURITY_SCHEMES: dict[str, Any] = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key: `ims_live_…` (production) or `ims_test_…` (staging), created "
        "with `ideasctl key create`. Its scopes decide which operations it may call.",
    }
}

ERROR_SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "additionalProperties": False,
        "description": "The body of every error answer.",
        "properties": {"error": {"$ref": "#/components/schemas/ErrorDetail"}},
    },
    "ErrorDetail": {
        "type": "object",
        "required": ["code", "message"],
        "additionalProperties": False,
        "description": "What went wrong.",
        "properties": {
            "code": {
                "type": "string",
                "description": "Machine-readable: `validation_error`, `invalid_json`, `unauthorized`, "
                "`invalid_key`, `insufficient_scope`, `plan_required`, `not_found`, "
                "`method_not_allowed`, `conflict`, `limit_exceeded`, `rate_limited`, "
                "`internal_error`, `service_unavailable`",
            },
            "message": {"type": "string", "description": "For people; never holds a secret"},
            "field": {
                "type": "string",
                "description": "The offending field of a `validation_error`, nested as `ideas[3].title`",
            },
        },
    },
}

# status -> (component name, description, example error)
ERRORS: dict[str, tuple[str, str, dict[str, str]]] = {
    "400": (
        "ValidationError",
        "Invalid JSON, or a field or query parameter failed validation (`field` names it), "
        "or the body did not arrive in time (`field` is `body`; the connection is then closed)",
        {"code": "validation_error", "message": "title is required", "field": "title"},
    ),
    "401": (
        "Unauthorized",
        "The key is missing, malformed (`unauthorized`), or not an active key (`invalid_key`)",
        {"code": "invalid_key", "message": "Invalid or revoked API key"},
    ),
    "403": (
        "Forbidden",
        "The key lacks the scope (`insufficient_scope`), the plan lacks the "
        "feature (`plan_required`), or an automation limit is reached (`limit_exceeded`)",
        {"code": "insufficient_scope", "message": "This call needs the ideas:write scope"},
    ),
    "404": (
        "NotFound",
        "Not found in this workspace (records of other workspaces, and path "
        "ids that are not UUIDs, are not found either)",
        {"code": "not_found", "message": "Resource not found"},
    ),
    "405": (
        "MethodNotAllowed",
        "The path exists, but not with this method; `Allow` lists its methods",
        {"code": "method_not_allowed", "message": "Method not allowed"},
    ),
    "409": (
        "Conflict",
        "A duplicate or conflicting record, or an `Idempotency-Key` reused "
        "with another body or still in flight",
        {"code": "conflict", "message": "Conflict"},
    ),
    "413": (
        "PayloadTooLarge",
        "The body is over 1 MiB",
        {"code": "validation_error", "message": "Request body exceeds 1 MiB"},
    ),
    "422": (
        "LimitExceeded",
        "A resource limit is reached (e.g. 10 webhook subscriptions)",
        {"code": "limit_exceeded", "message": "Limit exceeded"},
    ),
    "429": (
        "TooManyRequests",
        "The rate limit is reached, or this workspace's share of the service's concurrent "
        "requests is in use by its other requests (refused after a wait of a few seconds), or "
        "(for a test ping) its share of delivery connections is in use; retry after "
        "`Retry-After` seconds",
        {"code": "rate_limited", "message": "Rate limit of 120 requests per minute exceeded"},
    ),
    "500": (
        "InternalError",
        "Unexpected error; the message names the request id",
        {
            "code": "internal_error",
            "message": "Internal server error (request 6f1d0c3e9a8b4f7e8d6c5b4a39281706)",
        },
    ),
    "503": (
        "ServiceUnavailable",
        "A service is temporarily unavailable, or every workspace's requests together use all "
        "of its capacity (refused after a wait of a few seconds); retry later",
        {"code": "service_unavailable", "message": "Service temporarily unavailable"},
    ),
}
ERROR_RESPONSES = {status: name for status, (name, _, _) in ERRORS.items()}


def _header(description: str, schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"description": description, "required": required, "schema": schema}


COMPONENT_HEADERS: dict[str, Any] = {
    "X-Request-Id": _header(
        "Identifies the request in the service's logs and events: the request's own "
        "`X-Request-Id` when it sent a printable one of up to 128 characters, else a new one",
        {"type": "string"},
    ),
    "RateLimit-Limit": _header(
        "Requests allowed per window of 60 seconds (per workspace; per "
        "client address without a key)",
        {"type": "integer"},
    ),
    "RateLimit-Remaining": _header("Requests left in the current window", {"type": "integer"}),
    "RateLimit-Reset": _header("Seconds until the current window ends", {"type": "integer"}),
    "Retry-After": _header("Seconds to wait before trying again", {"type": "integer"}),
    "Allow": _header("The methods the path answers", {"type": "string"}),
    "Idempotent-Replayed": _header(
        "`true` when the answer is the stored answer to an earlier request with the same "
        "`Idempotency-Key` (nothing was changed again)",
        {"type": "string", "enum": ["true"]},
        required=False,
    ),
    "Content-Disposition": _header(
        'On CSV exports: `attachment; filename="<kind>-<UTC date>.csv"`',
        {"type": "string"},
        required=False,
    ),
}

IDEMPOTENCY_KEY: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Makes a retry safe: a repeat with the same key and body, from the same API "
    "key, within 24 hours gets the first answer again (with `Idempotent-Replayed: true`) and "
    "changes nothing; the same key with another body, or while the first request is "
    "still in flight, answers 409 `conflict`. Keys belong to the API key that sent them: "
    "another key of the workspace may use the same one for its own request. 1 to 255 "
    "printable characters. A POST that changes nothing (`POST /ideas/similar`; on `/mcp`, "
    "every message but a `tools/call` of a tool that changes data) checks the key and "
    "otherwise ignores it: it runs again each time and no answer is kept. An answer larger "
    "than the gateway stores (IDEMPOTENCY_MAX_STORED_BYTES, 2 MiB by default; a batch of 100 "
    "ideas stays under it) is relayed but not kept: the key is freed, and a repeat runs again.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"},
    "example": "9b2f6c1e-create-idea-42",
}

BASE_HEADERS = ("X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


def header_refs(
    method: str, success: bool, export: bool = False, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The headers of an answer: every answer carries the request id and the rate limits."""
    names = list(BASE_HEADERS) + list(extra)
    if success and method == "POST":
        names.append("Idempotent-Replayed")
    if success and export:
        names.append("Content-Disposition")
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def _error_headers(status: str) -> dict[str, Any]:
    extra = {"429": ("Retry-After",), "405": ("Allow",)}
    headers = header_refs("", False, extra=extra.get(status, ()))
    if status.startswith("5"):
        # A failure may strike before the request was counted (the limiter's database is
        # down, say): the limits are then not known, and not sent.
        for name in BASE_HEADERS[1:]:
            headers[name] = {
                **COMPONENT_HEADERS[name],
                "required": False,
                "description": COMPONENT_HEADERS[name]["description"] + "; absent when the "
                "failure struck before the request was counted",
            }
    if status == "503":
        headers["Retry-After"] = {
            **COMPONENT_HEADERS["Retry-After"],
            "required": False,
            "description": "Seconds to wait, when the service knows: a "
            "busy export (all export slots taken), a statement that ran "
            "past its time limit, a service whose capacity was all in use, or a database "
            "with no connection free",
        }
    return headers


def error_responses() -> dict[str, Any]:
    return {
        name: {
            "description": description,
            "headers": _error_headers(status),
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/Error"},
                    "example": {"error": error},
                }
            },
        }
        for status, (name, description, error) in ERRORS.items()
    }


def _signed_headers() -> list[dict[str, Any]]:
    def header(name: str, description: str) -> dict[str, Any]:
        # The Standard Webhooks trio is declared optional: receivers verify with either set.
        return {
            "name": name,
            "in": "header",
            "required": not name.startswith("webhook-"),
            "description": description,
            "schema": {"type": "string"},
        }

    return [
        header("X-Service-Event", "The event type"),
        header("X-Service-Delivery", "The delivery's id: the same on every attempt"),
        header("X-Service-Timestamp", "Unix time in seconds when the attempt was signed"),
        header(
            "X-Service-Signature",
            "Lowercase hex HMAC-SHA256, keyed with the "
            'subscription\'s secret, of `timestamp + "." + raw body`; compare in constant '
            "time. During a secret rotation, two digests separated by a comma, the new "
            "secret's first",
        ),
        header(
            "webhook-id",
            "Standard Webhooks: the `X-Service-Delivery` value (for a test ping, its event id)",
        ),
        header("webhook-timestamp", "Standard Webhooks: the `X-Service-Timestamp` value"),
        header(
            "webhook-signature",
            "Standard Webhooks: `v1,` + base64 HMAC-SHA256 over "
            "`webhook-id.webhook-timestamp.body`, keyed with the base64-decoded part of the "
            "secret after `whsec_` (two entries separated by a space during a rotation)",
        ),
    ]


DELIVERY_RULES = (
    "\n\nDelivered as a signed POST to each active subscription that lists the event. A 2xx "
    "answer within the timeout (10 s by default) acknowledges it; anything else, a timeout, a "
    "connection error or a redirect fails the attempt, which is retried on the retry schedule "
    "(`X-Service-Delivery` stays the same). A 410 answer deactivates the subscription."
)


def _receiver_responses(gone: str) -> dict[str, Any]:
    return {
        "2XX": {"description": "Received: the delivery is done"},
        "410": {"description": gone},
        "default": {"description": "Not received: the attempt failed and is retried"},
    }


def webhooks_section(media: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """One POST per event type: the headers and the payload a receiver gets."""
    section: dict[str, Any] = {}
    for kind, model in EVENT_MODELS.items():
        ping = kind == "webhook.test"
        section[kind] = {
            "post": {
                "operationId": "webhook_" + kind.replace(".", "_"),
                "summary": kind,
                "tags": ["Webhooks"],
                "security": [],
                "description": EVENTS[kind][2] + ("" if ping else DELIVERY_RULES),
                "parameters": _signed_headers(),
                "requestBody": {"required": True, "content": {"application/json": media(model)}},
                "responses": _receiver_responses(
                    "Ignored for a test ping" if ping else "Gone: the subscription is deactivated"
                ),
            }
        }
    section["new_idea"] = {
        "post": {
            "operationId": "webhook_new_idea",
            "summary": "new_idea (automation hooks)",
            "tags": ["Automation"],
            "security": [],
            "description": "Every new idea, whatever created it, POSTed to each hook subscribed "
            "through the automation API, with the same retry schedule. The same "
            "idea may rarely arrive twice: `id` is the de-duplication key.",
            "requestBody": {
                "required": True,
                "content": {"application/json": media(NewIdeaPayload)},
            },
            "responses": _receiver_responses("Gone: the hook is removed"),
        }
    }
    return section
