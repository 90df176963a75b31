"""A customer recognised from a new signal's e-mail is linked to the signal's idea
(docs/ideas.md, Signals): the ideas service emits `signal.matched` (queue `customers`), and
the link is made here as `POST /ideas/{id}/customers` makes it, but a pair already linked is
left as it is (no conflict). A new link emits `link.created`, which the ideas service projects
onto `totalCustomerARR`; a merged duplicate's primaries get it as for any link."""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from . import demand, events, links, merges, store


async def on_matched(cur: aiopg.Cursor, ws: uuid.UUID, data: dict[str, Any]) -> None:
    idea_id, customer_id = uuid.UUID(data["ideaId"]), uuid.UUID(data["customerId"])
    if not await store.exists(cur, ws, customer_id):
        return
    await merges.lock_links(cur, ws, idea_id, shared=True)
    link = await links.insert(cur, ws, idea_id, customer_id)
    if link is None:
        # Linked already: a link that only votes held becomes direct (a signal match is a
        # direct reason, docs/customers.md), and goes up a chain of merges as a new one would.
        if await links.make_direct(cur, ws, idea_id, customer_id) is not None:
            await merges.follow_later(cur, ws, idea_id, [customer_id])
        return
    await events.link_created(
        cur, ws, idea_id, customer_id, link["linked_at"], link["arr"], link["version"], None
    )
    await merges.follow_later(cur, ws, idea_id, [customer_id])


async def handle(cur: aiopg.Cursor, event: dict[str, Any]) -> None:
    """The `customers` queue's handler: signal matches here, the links votes hold in
    demand.py, merges in merges.py."""
    kind, ws = event["type"], uuid.UUID(str(event["workspaceId"]))
    if kind == "signal.matched":
        await on_matched(cur, ws, event["data"])
    elif kind == "vote.changed":
        await demand.on_vote(cur, ws, event["data"])
    elif kind == "users.settle":
        await demand.on_settle(cur, ws, event["data"])
    else:
        await merges.handle(cur, event)


CONSUMERS = {"customers": handle}
