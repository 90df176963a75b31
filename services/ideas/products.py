"""The workspace's products: their writes, and an idea's product (docs/ideas.md, products).

Products nest through `parent_id`. Every write of a workspace's products takes one
transaction-scoped advisory lock of that workspace first, so the cycle check of a move, the
children check of a delete and a create under a parent each see the others' results: two
concurrent moves cannot make a loop, and a delete cannot race a new child. An idea's product is
held `FOR KEY SHARE` until the idea's transaction ends, so a concurrent delete waits for it and
then clears the idea's `productId` too; the delete locks the product's ideas before the product
(ideas first, as every idea change does), so the two cannot deadlock. The seed (`ideasctl seed`) writes its products through
these same functions.
"""

from __future__ import annotations

import uuid
from typing import Any

import aiopg

from libs.common import db
from libs.common.errors import Conflict, NotFound, ValidationFailed

from .render import IDEA_JSON

PRODUCT_SQL = """SELECT row_to_json(x)::text FROM (SELECT p.id, p.name, p.parent_id AS "parentId",
  (SELECT count(*) FROM ideas.ideas i WHERE i.workspace_id = p.workspace_id
     AND i.product_id = p.id AND i.status <> 'deleted') AS "ideaCount"
 FROM ideas.products p WHERE p.workspace_id = %s AND p.id = %s) x"""


async def _lock(cur: aiopg.Cursor, workspace_id: uuid.UUID) -> None:
    await cur.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('ideas.products:' || %s::text, 0))",
        (workspace_id,),
    )


async def _one(cur: aiopg.Cursor, workspace_id: uuid.UUID, product_id: uuid.UUID) -> str:
    text = await db.fetchval(cur, PRODUCT_SQL, (workspace_id, product_id))
    if text is None:
        raise NotFound("Product not found")
    return str(text)


async def _exists(cur: aiopg.Cursor, workspace_id: uuid.UUID, product_id: uuid.UUID) -> None:
    found = await db.fetchval(
        cur,
        "SELECT 1 FROM ideas.products WHERE workspace_id = %s AND id = %s",
        (workspace_id, product_id),
    )
    if found is None:
        raise NotFound("Product not found")


async def create(
    cur: aiopg.Cursor,
    workspace_id: uuid.UUID,
    name: str,
    parent_id: uuid.UUID | None,
    *,
    product_id: uuid.UUID | None = None,
) -> str:
    """The new product's JSON; 404 for a parent not of the workspace. `product_id` is the
    seed's (its ids are drawn from its own generator)."""
    await _lock(cur, workspace_id)
    if parent_id is not None:
        await _exists(cur, workspace_id, parent_id)
    new_id = product_id or uuid.uuid4()
    await cur.execute(
        "INSERT INTO ideas.products (workspace_id, id, name, parent_id) VALUES (%s, %s, %s, %s)",
        (workspace_id, new_id, name, parent_id),
    )
    return await _one(cur, workspace_id, new_id)


async def update(
    cur: aiopg.Cursor, workspace_id: uuid.UUID, product_id: uuid.UUID, fields: dict[str, Any]
) -> str:
    """Rename or move (fields by their API names: `name`, `parentId`)."""
    await _lock(cur, workspace_id)
    await _exists(cur, workspace_id, product_id)
    parent_id = fields.get("parentId")
    if parent_id is not None:
        await _exists(cur, workspace_id, parent_id)
        # The new parent's ancestors, itself first: the product among them would be a loop.
        loop = await db.fetchval(
            cur,
            """WITH RECURSIVE up(id, parent_id) AS (
                 SELECT id, parent_id FROM ideas.products WHERE workspace_id = %(ws)s AND id = %(p)s
                 UNION
                 SELECT p.id, p.parent_id FROM ideas.products p JOIN up ON p.id = up.parent_id
                  WHERE p.workspace_id = %(ws)s)
               SELECT 1 FROM up WHERE id = %(me)s""",
            {"ws": workspace_id, "p": parent_id, "me": product_id},
        )
        if loop is not None:
            raise ValidationFailed(
                "parentId: a product cannot be its own ancestor", field="parentId"
            )
    sets = {
        col: fields[name]
        for name, col in (("name", "name"), ("parentId", "parent_id"))
        if name in fields
    }
    assign = ", ".join(f"{col} = %s" for col in sets)  # names are ours, never the client's
    await cur.execute(
        f"UPDATE ideas.products SET {assign} WHERE workspace_id = %s AND id = %s",
        (*sets.values(), workspace_id, product_id),
    )
    return await _one(cur, workspace_id, product_id)


async def delete(cur: aiopg.Cursor, workspace_id: uuid.UUID, product_id: uuid.UUID) -> list[str]:
    """Delete the product (409 with children); return the Idea JSON of each idea it leaves
    (their `productId` is now null). The product row goes first: its lock waits for the
    transactions that hold it for an idea, whose rows the second statement then sees."""
    await _lock(cur, workspace_id)
    await _exists(cur, workspace_id, product_id)
    child = await db.fetchval(
        cur,
        "SELECT 1 FROM ideas.products WHERE workspace_id = %s AND parent_id = %s LIMIT 1",
        (workspace_id, product_id),
    )
    if child is not None:
        raise Conflict("The product has child products: move or delete them first")
    await cur.execute(  # ideas before the product, in the order every idea change takes
        "SELECT 1 FROM ideas.ideas WHERE workspace_id = %s AND product_id = %s"
        " ORDER BY id FOR UPDATE",
        (workspace_id, product_id),
    )
    await cur.execute(
        "DELETE FROM ideas.products WHERE workspace_id = %s AND id = %s", (workspace_id, product_id)
    )
    await cur.execute(
        "UPDATE ideas.ideas i SET product_id = NULL, updated_at = now()"
        f" WHERE workspace_id = %s AND product_id = %s RETURNING {IDEA_JSON}::text",
        (workspace_id, product_id),
    )
    return [r[0] for r in await cur.fetchall()]


async def check(cur: aiopg.Cursor, workspace_id: uuid.UUID, product_ids: list[uuid.UUID]) -> None:
    """404 unless every id is a product of the workspace; holds them until the transaction
    ends (a concurrent delete waits, then clears them from the ideas)."""
    wanted = sorted(set(product_ids))
    if not wanted:
        return
    rows = await db.fetchall(
        cur,
        "SELECT id FROM ideas.products WHERE workspace_id = %s AND id = ANY(%s::uuid[])"
        " ORDER BY id FOR KEY SHARE",
        (workspace_id, wanted),
    )
    if len(rows) != len(wanted):
        raise NotFound("Product not found")
