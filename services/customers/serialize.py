"""Customer rows to response bodies. CustomerFull is built in SQL (`store.CUSTOMER_JSON`) and
goes out as a fragment; a customer as linked to an idea is built here."""

from __future__ import annotations

from typing import Any

import orjson

from libs.common import db
from libs.common.render import money


def customer_full(row: db.Row) -> orjson.Fragment:
    return orjson.Fragment(row["json"])


def linked_customer(row: db.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "email": row["email"],
        "domain": row["domain"],
        "arr": money(row["arr"]),
        "mrr": money(row["mrr"]),
        "plan": row["plan"],
        "source": row["source"],
        "linkedAt": row["linked_at"],
    }


def user(row: db.Row, vote_count: int) -> dict[str, Any]:
    """A User, its keys in the document's order; `vote_count` from the ideas service."""
    return {
        "id": row["id"],
        "name": row["name"],
        "email": row["email"],
        "externalId": row["external_id"],
        "customerId": row["customer_id"],
        "avatarUrl": row["avatar_url"],
        "metadata": None if row["metadata"] is None else orjson.Fragment(row["metadata"]),
        "voteCount": vote_count,
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }
