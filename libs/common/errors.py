"""The API's errors: handlers raise them, one middleware renders the envelope.

ApiError                    500 internal_error (base; anything unexpected ends here too)
├── InvalidJson             400 invalid_json
├── ValidationFailed        400 validation_error, names the offending `field`
├── Unauthorized            401 unauthorized
├── InvalidKey              401 invalid_key
├── InsufficientScope       403 insufficient_scope
├── PlanRequired            403 plan_required
├── NotFound                404 not_found
├── MethodNotAllowed        405 method_not_allowed
├── Conflict                409 conflict
├── PayloadTooLarge         413 validation_error
├── LimitExceeded           422 limit_exceeded
│   └── AutomationLimitReached  403 limit_exceeded (the automation API's quota and hook limits)
├── RateLimited             429 rate_limited
└── ServiceUnavailable      503 service_unavailable
    ├── QueryTimeout        503 service_unavailable (a statement ran past its timeout)
    └── PoolTimeout         503 service_unavailable (no pooled connection free in time)
"""

from __future__ import annotations

from typing import Any, ClassVar


class ApiError(Exception):
    """An error the client sees as `{"error": {"code", "message"[, "field"]}}`."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    default_message: ClassVar[str] = "Internal server error"

    def __init__(
        self,
        message: str | None = None,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message or self.default_message)
        self.message = message or self.default_message
        self.field = field
        self.headers = headers or {}
        if code is not None:
            self.code = code  # type: ignore[misc]

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


class InvalidJson(ApiError):
    """The request body is not valid JSON."""

    status, code, default_message = 400, "invalid_json", "Request body is not valid JSON"


class ValidationFailed(ApiError):
    """A field failed validation; `field` names it."""

    status, code, default_message = 400, "validation_error", "Validation failed"


class Unauthorized(ApiError):
    """The Authorization header is missing or malformed."""

    status, code, default_message = 401, "unauthorized", "Missing or malformed Authorization header"


class InvalidKey(ApiError):
    """The bearer token is not an active key."""

    status, code, default_message = 401, "invalid_key", "Invalid or revoked API key"


class InsufficientScope(ApiError):
    """The key lacks the scope the route needs."""

    status, code, default_message = (
        403,
        "insufficient_scope",
        "The API key lacks the required scope",
    )


class PlanRequired(ApiError):
    """The workspace's plan does not include the feature."""

    status, code, default_message = (
        403,
        "plan_required",
        "This feature is not available on your plan",
    )


class NotFound(ApiError):
    """The record is absent or belongs to another workspace."""

    status, code, default_message = 404, "not_found", "Resource not found"


class MethodNotAllowed(ApiError):
    """The path exists but not with this method."""

    status, code, default_message = 405, "method_not_allowed", "Method not allowed"


class Conflict(ApiError):
    """A duplicate or conflicting resource."""

    status, code, default_message = 409, "conflict", "Conflict"


class PayloadTooLarge(ApiError):
    """The body exceeds 1 MiB."""

    status, code, default_message = 413, "validation_error", "Request body exceeds 1 MiB"


class LimitExceeded(ApiError):
    """A resource limit is reached."""

    status, code, default_message = 422, "limit_exceeded", "Limit exceeded"


class AutomationLimitReached(LimitExceeded):
    """A plan limit of the automation API is reached (its monthly quota, its hooks): the
    automation API answers these 403, with the same code."""

    status, default_message = 403, "Plan limit reached"


class RateLimited(ApiError):
    """Too many requests in the window."""

    status, code, default_message = 429, "rate_limited", "Rate limit exceeded"


class ServiceUnavailable(ApiError):
    """A dependency is down; retry later."""

    status, code, default_message = 503, "service_unavailable", "Service temporarily unavailable"


class QueryTimeout(ServiceUnavailable):
    """The database cancelled a statement (statement_timeout): retry shortly."""

    default_message = "The database did not answer in time; retry shortly"

    def __init__(self, message: str | None = None, **kw: Any) -> None:
        kw.setdefault("headers", {"Retry-After": "1"})
        super().__init__(message, **kw)


class PoolTimeout(ServiceUnavailable):
    """No connection of the process's pool came free within DB_POOL_TIMEOUT_S (every one is in
    use): the database is busy, not broken; retry shortly (libs/common/db.py)."""

    default_message = "The database is busy; retry shortly"

    def __init__(self, message: str | None = None, **kw: Any) -> None:
        kw.setdefault("headers", {"Retry-After": "1"})
        super().__init__(message, **kw)
