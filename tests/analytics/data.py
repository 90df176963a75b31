"""Builders of hand-made workspaces: rows written straight into the owners' tables.

Reports depend on moments in the past (created 100 days ago, decided on a period boundary),
which no public route can set; the tests write those rows directly, then read every number
back through the gateway.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg2
import psycopg2.extras

psycopg2.extras.register_uuid()

_numbers = itertools.count(1)
NOW = datetime.now(UTC)


def ago(days: float = 0, **kw: float) -> datetime:
    return datetime.now(UTC) - timedelta(days=days, **kw)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


class Db:
    """A workspace's rows; every insert commits at once."""

    def __init__(self, database_url: str, workspace_id: str) -> None:
        self.conn = psycopg2.connect(database_url)
        self.conn.autocommit = True
        self.ws = uuid.UUID(workspace_id)

    def close(self) -> None:
        self.conn.close()

    def _insert(self, table: str, row: dict[str, Any]) -> None:
        cols = ", ".join(row)
        marks = ", ".join(["%s"] * len(row))
        with self.conn.cursor() as cur:
            cur.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(row.values()))

    def idea(self, title: str = "An idea", **fields: Any) -> uuid.UUID:
        row: dict[str, Any] = {
            "workspace_id": self.ws,
            "id": uuid.uuid4(),
            "number": next(_numbers),
            "title": title,
            "status": "new",
            "title_key": title.lower(),
            "created_at": ago(1),
        }
        row.update(fields)
        if "shipped_at" in fields and "status" not in fields:
            row["status"] = "shipped"
        self._insert("ideas.ideas", row)
        return row["id"]  # type: ignore[no-any-return]

    def signal(self, idea_id: uuid.UUID, platform: str = "slack", **fields: Any) -> uuid.UUID:
        row: dict[str, Any] = {
            "workspace_id": self.ws,
            "id": uuid.uuid4(),
            "idea_id": idea_id,
            "platform": platform,
            "similarity": 0.9,
            "detected_at": ago(1),
        }
        row.update(fields)
        self._insert("ideas.signals", row)
        return row["id"]  # type: ignore[no-any-return]

    def stage(self, name: str, position: int) -> uuid.UUID:
        sid = uuid.uuid4()
        self._insert(
            "ideas.roadmap_stages",
            {
                "workspace_id": self.ws,
                "id": sid,
                "name": name,
                "slug": name.lower(),
                "position": position,
            },
        )
        return sid

    def tag(self, name: str, *idea_ids: uuid.UUID) -> uuid.UUID:
        tid = uuid.uuid4()
        self._insert("ideas.tags", {"workspace_id": self.ws, "id": tid, "name": name})
        for idea_id in idea_ids:
            self._insert(
                "ideas.idea_tags", {"workspace_id": self.ws, "idea_id": idea_id, "tag_id": tid}
            )
        return tid

    def customer(self, name: str = "Acme", **fields: Any) -> uuid.UUID:
        row: dict[str, Any] = {"id": uuid.uuid4(), "workspace_id": self.ws, "name": name}
        row.update(fields)
        self._insert("customers.customers", row)
        return row["id"]  # type: ignore[no-any-return]

    def link(self, idea_id: uuid.UUID, customer_id: uuid.UUID) -> None:
        self._insert(
            "customers.idea_links",
            {"workspace_id": self.ws, "idea_id": idea_id, "customer_id": customer_id},
        )
