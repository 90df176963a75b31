"""One attempt: sign afresh, POST the stored bytes, judge the answer.

Signatures (docs/webhooks.md, Verifying), computed when the attempt is signed, with every
secret valid at that moment (the current one first; during a rotation the previous one too):
`X-Service-Signature` is lowercase hex HMAC-SHA256(secret, timestamp + "." + body), comma
separated; `webhook-signature` (Standard Webhooks) is "v1," + base64 HMAC-SHA256 keyed with the
base64-decoded part of the secret after `whsec_`, over id + "." + timestamp + "." + body, space
separated. A 2xx answer within the timeout is success; anything else
(another status, a redirect, a timeout, a refused or failed connection) is a failed attempt.
Only the first `BODY_CAP` bytes of an answer are read. Whatever goes wrong, `send` returns an
`Answer`: an attempt always ends as a recorded outcome (docs/api.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import lru_cache
from urllib.parse import urlsplit

import aiohttp
import structlog

from libs.common.tasks import raise_if_cancelled

from .settings import WebhooksSettings
from .store import Claimed, Secrets
from .targets import REFUSED, GuardedResolver, TargetRefused, guarded_socket, target_host

log = structlog.get_logger("webhooks.sender")

BODY_CAP = 4096
ERROR_CAP = 500
USER_AGENT = "ims-webhooks/1.1"


@dataclass(frozen=True, kw_only=True)
class Answer:
    ok: bool
    status_code: int | None
    error: str | None
    duration_ms: int
    signed_at: int
    retry_after_s: float | None = None  # what a 429/503 asked for, when it said
    started_at: float = 0.0  # Unix time the attempt started


SECRET_PREFIX = "whsec_"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


@lru_cache(maxsize=1024)
def standard_key(secret: str) -> bytes:
    """The Standard Webhooks key: the base64-decoded part of the secret after `whsec_`
    (kept per secret: a subscription's attempts all sign with the same few secrets)."""
    text = secret.removeprefix(SECRET_PREFIX)
    return base64.b64decode(text + "=" * (-len(text) % 4))


def sign_standard(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(
        standard_key(secret), f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256
    ).digest()
    return "v1," + base64.b64encode(mac).decode()


@lru_cache(maxsize=4096)
def _host_refusal(url: str) -> str | None:
    """Why the host of `url` may not be delivered to, or None. Kept per URL: a subscription's
    attempts all go to the same URL, and reading a host costs more than the signing does."""
    try:  # rows written before creation checked the host (docs/api.md)
        target_host(url)
    except ValueError:
        return f"{REFUSED}: invalid host"
    return None


def signed_headers(
    secrets: Secrets, msg_id: str, event_type: str, body: bytes, now: float
) -> dict[str, str]:
    """Every header of an attempt or a ping, signed at `now` with the secrets valid then."""
    timestamp = int(now)
    valid = secrets.valid(now)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event_type,
        "X-Service-Delivery": msg_id,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": ",".join(sign(s, timestamp, body) for s in valid),
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign_standard(s, msg_id, timestamp, body) for s in valid),
    }


def delivery_session(settings: WebhooksSettings) -> aiohttp.ClientSession:
    """The one session for every delivery: verified TLS, guarded resolution, no cookies."""
    ctx = ssl.create_default_context()
    if settings.webhook_ca_file:
        ctx.load_verify_locations(cafile=settings.webhook_ca_file)
    guarded = not settings.webhook_allow_private_targets
    # Names resolve to public addresses only, and every address connected to, resolved or an
    # IP literal (which aiohttp never hands to a resolver), passes the same check again.
    connector = aiohttp.TCPConnector(
        limit=settings.webhook_concurrency,
        limit_per_host=settings.webhook_per_host_concurrency,
        ssl=ctx,
        resolver=GuardedResolver() if guarded else None,
        socket_factory=guarded_socket if guarded else None,
        ttl_dns_cache=10,
        keepalive_timeout=30,
    )
    return aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        auto_decompress=False,
    )


class Sender:
    def __init__(self, session: aiohttp.ClientSession, settings: WebhooksSettings) -> None:
        self.session = session
        self.timeout = aiohttp.ClientTimeout(total=settings.webhook_timeout_s)
        self.allow_private = settings.webhook_allow_private_targets
        self.allow_http = settings.webhook_allow_http

    def _refusal(self, job: Claimed) -> str | None:
        parts = urlsplit(job.target_url)
        # Hooks are https only; main subscriptions may use http only where allowed.
        if parts.scheme != "https" and (job.kind == "automation" or not self.allow_http):
            return f"{REFUSED}: https required"
        return _host_refusal(job.target_url)

    async def send(self, job: Claimed) -> Answer:
        now = time.time()
        signed_at = int(now)
        started = time.perf_counter()
        code: int | None = None
        wait: float | None = None
        try:
            error = self._refusal(job)
            if error is None:
                headers = signed_headers(job.secrets, str(job.id), job.event_type, job.body, now)
                code, error, wait = await self._post(job.target_url, job.body, headers)
        except Exception as err:  # whatever it was, the attempt ends as a failed one
            raise_if_cancelled(err)
            log.warning("attempt_error", delivery_id=str(job.id), error=repr(err))
            code, error, wait = None, f"attempt failed: {type(err).__name__}", None
        ms = int((time.perf_counter() - started) * 1000)
        return Answer(
            ok=error is None,
            status_code=code,
            error=error,
            duration_ms=ms,
            signed_at=signed_at,
            retry_after_s=wait,
            started_at=now,
        )

    async def _post(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int | None, str | None, float | None]:
        try:
            async with self.session.post(
                url, data=body, headers=headers, allow_redirects=False, timeout=self.timeout
            ) as resp:
                snippet = await resp.content.read(BODY_CAP)
                if 200 <= resp.status < 300:
                    return resp.status, None, None
                wait = None
                if resp.status in (429, 503):
                    wait = retry_after(resp.headers.get("Retry-After"), time.time())
                text = snippet.decode("utf-8", "replace").strip()
                error = (f"HTTP {resp.status}" + (f": {text}" if text else ""))[:ERROR_CAP]
                return resp.status, error, wait
        except TimeoutError:
            return None, f"timeout: no answer within {self.timeout.total:g} s", None
        except aiohttp.ClientError as err:
            return None, describe(err)[:ERROR_CAP], None


_ASCII_DIGITS = frozenset("0123456789")


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds from `now` that a `Retry-After` header asks for: RFC 9110's delay-seconds
    (ASCII digits only) or an HTTP-date; None when absent or anything else."""
    if not value:
        return None
    value = value.strip(" \t")
    if not value or not value.isascii():
        return None
    if _ASCII_DIGITS.issuperset(value):
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def describe(err: BaseException) -> str:
    """A short, secret-free text for a failed connection: never an address (a name's
    resolved address is nobody's business but the resolver's)."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, TargetRefused):
            return REFUSED
        cause = cause.__cause__ or getattr(cause, "os_error", None)
    if isinstance(err, aiohttp.ClientConnectorCertificateError):
        return f"TLS certificate error: {err.certificate_error}"
    if isinstance(err, aiohttp.ClientSSLError):
        return "TLS error"
    if isinstance(err, aiohttp.ClientConnectorError):
        reason = err.os_error.strerror or type(err.os_error).__name__
        return f"connection error: cannot connect to {err.host}:{err.port}: {reason}"
    return f"connection error: {type(err).__name__}: {err}"
