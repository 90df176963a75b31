"""Who is calling: what the gateway established, passed to services in headers.

The gateway authenticates the key and forwards the workspace, key and scopes in `X-Ims-*`
headers together with the internal token; services trust these headers only with that token.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

H_TOKEN = "X-Ims-Internal-Token"
H_WORKSPACE = "X-Ims-Workspace-Id"
H_WORKSPACE_NAME = "X-Ims-Workspace-Name"
H_PLAN = "X-Ims-Plan"
H_INBOX = "X-Ims-Inbox-Mode"
H_KEY_ID = "X-Ims-Key-Id"
H_KEY_NAME = "X-Ims-Key-Name"
H_SCOPES = "X-Ims-Scopes"
H_REQUEST_ID = "X-Request-Id"
# The workspace's other settings, sent only when set (most workspaces set none).
H_SHORT_CODE = "X-Ims-Workspace-Short-Code"
H_SLUG = "X-Ims-Workspace-Slug"
H_DESTINATION = "X-Ims-Default-Destination"
H_PUBLIC = "X-Ims-Public-Submission"


@dataclass(frozen=True)
class Caller:
    workspace_id: uuid.UUID
    workspace_name: str
    plan: str
    inbox_mode: str
    key_id: uuid.UUID | None
    key_name: str
    scopes: frozenset[str]
    request_id: str
    short_code: str | None = None
    slug: str | None = None
    default_destination: str | None = None
    public_submission: bool = False

    def headers(self, token: str) -> dict[str, str]:
        """Headers that carry this caller to another service (service-to-service calls too)."""
        out = {
            H_TOKEN: token,
            H_WORKSPACE: str(self.workspace_id),
            H_WORKSPACE_NAME: _enc(self.workspace_name),
            H_PLAN: self.plan,
            H_INBOX: self.inbox_mode,
            H_KEY_ID: str(self.key_id or ""),
            H_KEY_NAME: _enc(self.key_name),
            H_SCOPES: " ".join(sorted(self.scopes)),
            H_REQUEST_ID: self.request_id,
        }
        for name, value in (
            (H_SHORT_CODE, self.short_code),
            (H_SLUG, self.slug),
            (H_DESTINATION, self.default_destination),
        ):
            if value is not None:
                out[name] = _enc(value)
        if self.public_submission:
            out[H_PUBLIC] = "1"
        return out


def _enc(text: str) -> str:
    # Names may hold any character, control characters and line breaks included (a workspace
    # names itself through PATCH /workspace), which no HTTP parser takes in a header value,
    # and leading or trailing white space, which parsers strip: percent-encoded UTF-8, ASCII.
    return quote(text, safe="")


def _dec(text: str) -> str:
    return unquote(text, errors="replace")


def caller_from_headers(h: Mapping[str, str], request_id: str) -> Caller | None:
    """The caller the headers carry (case-insensitive `h`), or None without a workspace."""
    try:
        workspace_id = uuid.UUID(h[H_WORKSPACE])
    except (KeyError, ValueError):
        return None
    key = h.get(H_KEY_ID, "")
    return Caller(
        workspace_id=workspace_id,
        workspace_name=_dec(h.get(H_WORKSPACE_NAME, "")),
        plan=h.get(H_PLAN, "starter"),
        inbox_mode=h.get(H_INBOX, "direct"),
        key_id=uuid.UUID(key) if key else None,
        key_name=_dec(h.get(H_KEY_NAME, "")),
        scopes=frozenset(h.get(H_SCOPES, "").split()),
        request_id=request_id,
        short_code=_dec(h[H_SHORT_CODE]) if H_SHORT_CODE in h else None,
        slug=h.get(H_SLUG),
        default_destination=h.get(H_DESTINATION),
        public_submission=h.get(H_PUBLIC) == "1",
    )
