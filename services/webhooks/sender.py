"""One attempt: sign afresh, POST the stored bytes, judge the answer.

Signature: lowercase hex HMAC-SHA256(secret, timestamp + "." + body), the timestamp being the
moment the attempt is signed. A 2xx answer within the timeout is success; anything else
(another status, a redirect, a timeout, a refused or failed connection) is a failed attempt.
Only the first `BODY_CAP` bytes of an answer are read.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import aiohttp

from libs.common.settings import Settings

from .store import Claimed
from .targets import GuardedResolver, TargetRefused, literal_refused

BODY_CAP = 4096
ERROR_CAP = 500
USER_AGENT = "ims-webhooks/1.1"


@dataclass(frozen=True)
class Answer:
    ok: bool
    status_code: int | None
    error: str | None
    duration_ms: int
    signed_at: int
    retry_after_s: float | None = None  # what a 429/503 asked for, when it said


def sign(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def delivery_session(settings: Settings) -> aiohttp.ClientSession:
    """The one session for every delivery: verified TLS, guarded resolution, no cookies."""
    ctx = ssl.create_default_context()
    if settings.webhook_ca_file:
        ctx.load_verify_locations(cafile=settings.webhook_ca_file)
    resolver = None if settings.webhook_allow_private_targets else GuardedResolver()
    connector = aiohttp.TCPConnector(
        limit=settings.webhook_concurrency, limit_per_host=settings.webhook_per_host_concurrency,
        ssl=ctx, resolver=resolver, ttl_dns_cache=10, keepalive_timeout=30)
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                 trust_env=False, auto_decompress=False)


class Sender:
    def __init__(self, session: aiohttp.ClientSession, settings: Settings) -> None:
        self.session = session
        self.timeout = aiohttp.ClientTimeout(total=settings.webhook_timeout_s)
        self.allow_private = settings.webhook_allow_private_targets
        self.allow_http = settings.webhook_allow_http

    def _refusal(self, job: Claimed) -> str | None:
        parts = urlsplit(job.target_url)
        # Hooks are https only; main subscriptions may use http only where allowed.
        if parts.scheme != "https" and (job.kind == "automation" or not self.allow_http):
            return "target refused: https required"
        if not self.allow_private and literal_refused(parts.hostname or ""):
            return "target refused: private or reserved address"
        return None

    async def send(self, job: Claimed) -> Answer:
        signed_at = int(time.time())
        headers = {
            "Content-Type": "application/json", "User-Agent": USER_AGENT,
            "X-Service-Event": job.event_type, "X-Service-Delivery": str(job.id),
            "X-Service-Timestamp": str(signed_at),
            "X-Service-Signature": sign(job.secret, signed_at, job.body),
        }
        started = time.perf_counter()
        code: int | None = None
        wait: float | None = None
        error = self._refusal(job)
        if error is None:
            code, error, wait = await self._post(job.target_url, job.body, headers)
        ms = int((time.perf_counter() - started) * 1000)
        return Answer(error is None, code, error, ms, signed_at, wait)

    async def _post(self, url: str, body: bytes,
                    headers: dict[str, str]) -> tuple[int | None, str | None, float | None]:
        try:
            async with self.session.post(url, data=body, headers=headers, allow_redirects=False,
                                         timeout=self.timeout) as resp:
                snippet = await resp.content.read(BODY_CAP)
                if 200 <= resp.status < 300:
                    return resp.status, None, None
                wait = None
                if resp.status in (429, 503):
                    wait = retry_after(resp.headers.get("Retry-After"), time.time())
                text = snippet.decode("utf-8", "replace").strip()
                error = (f"HTTP {resp.status}" + (f": {text}" if text else ""))[:ERROR_CAP]
                return resp.status, error, wait
        except asyncio.TimeoutError:
            return None, f"timeout: no answer within {self.timeout.total:g} s", None
        except aiohttp.ClientError as err:
            return None, describe(err)[:ERROR_CAP], None


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds from `now` that a `Retry-After` header asks for (delta-seconds or an HTTP
    date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def describe(err: BaseException) -> str:
    """A short, secret-free text for a failed connection."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, TargetRefused):
            return f"target refused: {cause}"
        cause = cause.__cause__ or getattr(cause, "os_error", None)
    if isinstance(err, aiohttp.ClientConnectorCertificateError):
        return f"TLS certificate error: {err.certificate_error}"
    if isinstance(err, aiohttp.ClientSSLError):
        return "TLS error"
    return f"connection error: {type(err).__name__}: {err}"
