"""Rows to response bodies, without re-parsing stored JSON (metadata goes out as a fragment)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from libs.common import db


def money(value: Decimal | None) -> float | int | None:
    """numeric -> JSON number; whole amounts go out as integers (50000, not 50000.0)."""
    if value is None:
        return None
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def customer_full(row: db.Row) -> dict[str, Any]:
    metadata = row["metadata"]
    return {
        "id": row["id"], "name": row["name"], "email": row["email"], "domain": row["domain"],
        "arr": money(row["arr"]), "mrr": money(row["mrr"]), "plan": row["plan"],
        "source": row["source"], "externalId": row["external_id"],
        "crmCompanyId": row["crm_company_id"], "ideaCount": row["idea_count"],
        "metadata": None if metadata is None else orjson.Fragment(metadata),
        "createdAt": row["created_at"], "updatedAt": row["updated_at"],
    }


def linked_customer(row: db.Row) -> dict[str, Any]:
    return {
        "id": row["id"], "name": row["name"], "email": row["email"], "domain": row["domain"],
        "arr": money(row["arr"]), "mrr": money(row["mrr"]), "plan": row["plan"],
        "source": row["source"], "linkedAt": row["linked_at"],
    }
