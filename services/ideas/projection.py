"""The ideas service's projection of customers onto ideas' revenue fields.

Fed by the customers service's events (queue `ideas`: `customer.*`, `link.*`). Events may come
twice or in any order, so the projection is a state, not a running sum:
- each customer's ARR is kept with its version (the customer's `updatedAt`, strictly increasing
  per customer); a state applies only when it is newer than the one kept;
- links are a set; a removed link (`link.deleted`: an unlink or an unmerge) leaves its `linked_at` behind,
  and a `link.created` of the same pair that is not newer (a late or repeated one) is ignored;
- an idea's `total_customer_arr` (sum of its linked customers' current ARR; null when none is
  known) and `customer_count` are recomputed from those tables.

Locks, always in this order, so concurrent consumers neither deadlock nor miss each other's
rows: the customer's projection row first, then the affected idea rows (sorted by id). The
recomputing statement runs after the idea's lock is held, so it sees every committed link.
`rebuild` takes the projection tables' locks first for the same reason.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import aiopg

UPSERT_CUSTOMER = """
INSERT INTO ideas.customer_arr AS a (workspace_id, customer_id, arr, version)
VALUES (%s, %s, %s, %s::timestamptz)
ON CONFLICT (workspace_id, customer_id) DO UPDATE SET arr = EXCLUDED.arr, version = EXCLUDED.version
WHERE a.version < EXCLUDED.version
RETURNING 1"""

UPSERT_CONTACTS = """
INSERT INTO ideas.customer_contacts AS c (workspace_id, customer_id, email_key, domain_key, version)
VALUES (%s, %s, lower(%s), lower(%s), %s::timestamptz)
ON CONFLICT (workspace_id, customer_id) DO UPDATE SET email_key = EXCLUDED.email_key,
  domain_key = EXCLUDED.domain_key, version = EXCLUDED.version
WHERE c.version <= EXCLUDED.version"""

LOCK_IDEAS = """
SELECT id FROM ideas.ideas WHERE workspace_id = %s AND id = ANY(%s::uuid[]) ORDER BY id FOR UPDATE"""

REFRESH_IDEAS = """
UPDATE ideas.ideas i SET total_customer_arr = s.total, customer_count = s.n
FROM (SELECT l.idea_id, sum(a.arr) AS total, count(*)::int AS n
        FROM ideas.customer_links l
        LEFT JOIN ideas.customer_arr a
          ON a.workspace_id = l.workspace_id AND a.customer_id = l.customer_id
       WHERE l.workspace_id = %s AND l.idea_id = ANY(%s::uuid[])
       GROUP BY l.idea_id) s
WHERE i.workspace_id = %s AND i.id = s.idea_id
  AND (i.total_customer_arr IS DISTINCT FROM s.total OR i.customer_count <> s.n)"""


def money(value: Any) -> Decimal | None:
    """An amount from an event (JSON number or decimal text) as an exact decimal."""
    if value is None:
        return None
    if isinstance(value, float):
        return Decimal(repr(value))  # the shortest decimal of the double: what was stored
    return Decimal(value)


async def apply_customer(
    cur: aiopg.Cursor, workspace_id: str, customer_id: str, arr: Decimal | None, version: str
) -> bool:
    """Keep this state of the customer if it is newer; True when it was kept."""
    await cur.execute(UPSERT_CUSTOMER, (workspace_id, customer_id, arr, version))
    return await cur.fetchone() is not None


async def refresh(cur: aiopg.Cursor, workspace_id: str, idea_ids: list[str]) -> None:
    """Lock the ideas, then recompute their totals from the projection tables."""
    if not idea_ids:
        return
    await cur.execute(LOCK_IDEAS, (workspace_id, idea_ids))
    await cur.execute(REFRESH_IDEAS, (workspace_id, idea_ids, workspace_id))


async def on_customer(cur: aiopg.Cursor, workspace_id: str, data: dict[str, Any]) -> None:
    customer = data["customer"]
    version = customer.get("updatedAt") or customer["createdAt"]
    newer = await apply_customer(
        cur, workspace_id, customer["id"], money(customer.get("arr")), version
    )
    # Its e-mail and domain for the customer match of new signals (docs/ideas.md, Signals),
    # after customer_arr: the rebuild's lock order. Versioned apart from the ARR, which a
    # link event may have brought first at the same version.
    await cur.execute(
        UPSERT_CONTACTS,
        (workspace_id, customer["id"], customer.get("email"), customer.get("domain"), version),
    )
    if not newer:
        return  # an older or repeated state: nothing changes
    await cur.execute(
        "SELECT idea_id::text FROM ideas.customer_links"
        " WHERE workspace_id = %s AND customer_id = %s ORDER BY idea_id",
        (workspace_id, customer["id"]),
    )
    await refresh(cur, workspace_id, [r[0] for r in await cur.fetchall()])


async def on_link(cur: aiopg.Cursor, workspace_id: str, data: dict[str, Any]) -> None:
    # The customer row first (lock order), with the ARR the link saw: right even when this
    # event overtakes the customer's own events.
    await apply_customer(
        cur, workspace_id, data["customerId"], money(data.get("arr")), data["customerUpdatedAt"]
    )
    await cur.execute(LOCK_IDEAS, (workspace_id, [data["ideaId"]]))
    await cur.execute(
        "INSERT INTO ideas.customer_links (workspace_id, idea_id, customer_id, linked_at)"
        " SELECT %(ws)s, %(idea)s, %(customer)s, %(at)s::timestamptz WHERE NOT EXISTS (SELECT 1"
        "   FROM ideas.customer_link_removals r WHERE r.workspace_id = %(ws)s"
        "    AND r.idea_id = %(idea)s AND r.customer_id = %(customer)s"
        "    AND r.linked_at >= %(at)s::timestamptz) ON CONFLICT DO NOTHING",
        {
            "ws": workspace_id,
            "idea": data["ideaId"],
            "customer": data["customerId"],
            "at": data["linkedAt"],
        },
    )
    await cur.execute(REFRESH_IDEAS, (workspace_id, [data["ideaId"]], workspace_id))


async def on_unlink(cur: aiopg.Cursor, workspace_id: str, data: dict[str, Any]) -> None:
    """A link removed (an unlink or an unmerge): remember it, drop it, recompute the idea."""
    params = {
        "ws": workspace_id,
        "idea": data["ideaId"],
        "customer": data["customerId"],
        "at": data["linkedAt"],
    }
    await cur.execute(LOCK_IDEAS, (workspace_id, [data["ideaId"]]))
    await cur.execute(
        "INSERT INTO ideas.customer_link_removals AS r (workspace_id, idea_id, customer_id,"
        " linked_at) VALUES (%(ws)s, %(idea)s, %(customer)s, %(at)s::timestamptz)"
        " ON CONFLICT (workspace_id, idea_id, customer_id) DO UPDATE"
        " SET linked_at = greatest(r.linked_at, EXCLUDED.linked_at)",
        params,
    )
    await cur.execute(
        "DELETE FROM ideas.customer_links WHERE workspace_id = %(ws)s AND idea_id = %(idea)s"
        " AND customer_id = %(customer)s AND linked_at <= %(at)s::timestamptz",
        params,
    )
    await cur.execute(REFRESH_IDEAS, (workspace_id, [data["ideaId"]], workspace_id))
    # An idea left with no link: no revenue.
    await cur.execute(
        "UPDATE ideas.ideas i SET total_customer_arr = NULL, customer_count = 0"
        " WHERE workspace_id = %(ws)s AND id = %(idea)s AND customer_count <> 0"
        " AND NOT EXISTS (SELECT 1 FROM ideas.customer_links l"
        "   WHERE l.workspace_id = i.workspace_id AND l.idea_id = i.id)",
        params,
    )


async def handle(cur: aiopg.Cursor, event: dict[str, Any]) -> None:
    """The `ideas` queue's handler (runs in the Consumer's transaction)."""
    kind, workspace_id, data = event["type"], event["workspaceId"], event["data"]
    uuid.UUID(workspace_id)
    if kind in ("customer.created", "customer.updated"):
        await on_customer(cur, workspace_id, data)
    elif kind == "link.created":
        await on_link(cur, workspace_id, data)
    elif kind == "link.deleted":
        await on_unlink(cur, workspace_id, data)
    # other customer.* / link.* kinds carry nothing the projection needs


REBUILD = [
    # The projection tables first (the consumers' lock order); consumers wait until commit.
    "LOCK TABLE ideas.customer_arr, ideas.customer_links IN SHARE ROW EXCLUSIVE MODE",
    "DELETE FROM ideas.customer_arr WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s",
    """INSERT INTO ideas.customer_arr (workspace_id, customer_id, arr, version)
       SELECT workspace_id, id, arr, coalesce(updated_at, created_at) FROM customers.customers
        WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s""",
    "DELETE FROM ideas.customer_links WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s",
    """INSERT INTO ideas.customer_links (workspace_id, idea_id, customer_id, linked_at)
       SELECT workspace_id, idea_id, customer_id, linked_at FROM customers.idea_links
        WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s""",
    """UPDATE ideas.ideas i SET total_customer_arr = s.total, customer_count = s.n
       FROM (SELECT l.workspace_id, l.idea_id, sum(a.arr) AS total, count(*)::int AS n
               FROM ideas.customer_links l
               LEFT JOIN ideas.customer_arr a
                 ON a.workspace_id = l.workspace_id AND a.customer_id = l.customer_id
              WHERE %(ws)s::uuid IS NULL OR l.workspace_id = %(ws)s
              GROUP BY l.workspace_id, l.idea_id) s
      WHERE i.workspace_id = s.workspace_id AND i.id = s.idea_id
        AND (i.total_customer_arr IS DISTINCT FROM s.total OR i.customer_count <> s.n)""",
    """UPDATE ideas.ideas i SET total_customer_arr = NULL, customer_count = 0
      WHERE (%(ws)s::uuid IS NULL OR i.workspace_id = %(ws)s)
        AND (i.total_customer_arr IS NOT NULL OR i.customer_count <> 0)
        AND NOT EXISTS (SELECT 1 FROM ideas.customer_links l
                         WHERE l.workspace_id = i.workspace_id AND l.idea_id = i.id)""",
    "LOCK TABLE ideas.customer_contacts IN SHARE ROW EXCLUSIVE MODE",
    "DELETE FROM ideas.customer_contacts WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s",
    """INSERT INTO ideas.customer_contacts
         (workspace_id, customer_id, email_key, domain_key, version)
       SELECT workspace_id, id, lower(email), lower(domain), coalesce(updated_at, created_at)
         FROM customers.customers WHERE %(ws)s::uuid IS NULL OR workspace_id = %(ws)s""",
]


def rebuild(conn: Any, workspace_id: str | None = None) -> dict[str, int]:
    """Recompute the projection from the customers service's tables (psycopg2, one transaction).

    Safe while events flow: a later event for a state already rebuilt is older or a repeat,
    and is ignored.
    """
    counts: dict[str, int] = {}
    names = {2: "customers", 4: "links", 5: "ideasUpdated", 6: "ideasCleared"}
    with conn:  # commits, or rolls back on error
        with conn.cursor() as cur:
            for i, sql in enumerate(REBUILD):
                cur.execute(sql, {"ws": workspace_id})
                if i in names:
                    counts[names[i]] = cur.rowcount
    return counts


# Picked up by the ideas app (services/ideas/app.py): queue name -> handler.
CONSUMERS = {"ideas": handle}
