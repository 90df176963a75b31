"""Erasure of a person from the delivery log (SECURITY.md, Erasure): when an end user is
erased (`DELETE /users/{id}` in the customers service), the stored payloads of this
workspace's deliveries that carry the person's e-mail or name are rewritten without them.

A payload is the JSON body signed and sent (`webhooks.deliveries.body`). In it, a string value
equal to the person's name, or to their e-mail ignoring case, becomes null (an automation
`new_idea` payload's `authorName`, a string in its schema, becomes ""); the e-mail inside a
longer string (a signal's content, a comment's body) becomes `[redacted]`. A pending delivery
is rewritten too, so later attempts send the redacted body (each attempt signs what it sends).
The internal route answers the number of payloads rewritten.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import aiopg
import orjson
from aiohttp import web

from libs.common import db
from libs.common.render import dumps
from libs.common.validation import Body, parse_body
from libs.common.web import PG_POOL, caller, data_response

REDACTED = "[redacted]"
# Keys whose value the payload's schema says is a string (never null).
STRING_KEYS = {"authorName"}


class ErasureRequest(Body):
    email: str | None = None
    name: str | None = None


def redacted(value: Any, email: str | None, name: str | None, key: str | None = None) -> Any:
    """`value` with the person's e-mail and name taken out (the module's rules)."""
    if isinstance(value, dict):
        return {k: redacted(v, email, name, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, email, name) for v in value]
    if not isinstance(value, str):
        return value
    if (name is not None and value == name) or (
        email is not None and value.lower() == email.lower()
    ):
        return "" if key in STRING_KEYS else None
    if email is not None and email.lower() in value.lower():
        return re.sub(re.escape(email), REDACTED, value, flags=re.IGNORECASE)
    return value


async def redact(cur: aiopg.Cursor, ws: uuid.UUID, email: str | None, name: str | None) -> int:
    """Rewrite the workspace's stored payloads that carry the e-mail or the name; how many."""
    conds: list[str] = []
    params: list[Any] = [ws]
    if email:
        conds.append("strpos(lower(convert_from(body, 'UTF8')), %s) > 0")
        params.append(email.lower())
    if name:
        # The name as it is written inside a JSON string (the bodies are orjson's).
        conds.append("strpos(convert_from(body, 'UTF8'), %s) > 0")
        params.append(orjson.dumps(name).decode()[1:-1])
    if not conds:
        return 0
    rows = await db.fetchall(
        cur,
        "SELECT id, body FROM webhooks.deliveries WHERE workspace_id = %s"
        f" AND ({' OR '.join(conds)}) ORDER BY id FOR UPDATE",
        params,
    )
    n = 0
    for row in rows:
        before = orjson.loads(bytes(row["body"]))
        after = redacted(before, email, name or None)
        if after != before:
            await cur.execute(
                "UPDATE webhooks.deliveries SET body = %s WHERE id = %s", (dumps(after), row["id"])
            )
            n += 1
    return n


async def internal_erase_person(request: web.Request) -> web.Response:
    """`POST /internal/erasure` `{"email", "name"}` -> `{"data": {"redacted": n}}`."""
    body = await parse_body(request, ErasureRequest)
    async with db.transaction(request.app[PG_POOL]) as cur:
        n = await redact(cur, caller(request).workspace_id, body.email, body.name)
    return data_response({"redacted": n})


def setup_internal_routes(app: web.Application) -> None:
    app.router.add_post("/internal/erasure", internal_erase_person)
