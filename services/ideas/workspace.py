"""Workspace-level reads: info, roadmap stages, tags, products, members (JSON built in SQL).

Idea counts leave deleted ideas out. The workspace's settings (name, plan, inbox mode, short
code, slug, default destination, public submission) come from the caller headers the gateway
sets from its row of `gateway.workspaces` (written by `PATCH /workspace`, docs/gateway.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import aiopg

from libs.common import db
from libs.common.caller import Caller

# Each lists one JSON object per row (row_to_json: compact, keys in the SELECT list's order,
# which is the OpenAPI document's; date-times through ims_json_ts).
STAGES_SQL = """SELECT row_to_json(x)::text FROM (SELECT s.id, s.name, s.slug, s.color,
  s.position, s.is_default AS "isDefault",
  (SELECT count(*) FROM ideas.ideas i WHERE i.workspace_id = s.workspace_id
     AND i.roadmap_stage_id = s.id AND i.status <> 'deleted') AS "ideaCount",
  ims_json_ts(s.created_at) AS "createdAt"
 FROM ideas.roadmap_stages s WHERE s.workspace_id = %s ORDER BY s.position, s.id) x"""

TAGS_SQL = """SELECT row_to_json(x)::text FROM (SELECT t.id, t.name, t.color,
  coalesce(c.n, 0) AS "ideaCount"
 FROM ideas.tags t LEFT JOIN (
   SELECT it.tag_id, count(*) AS n FROM ideas.idea_tags it
     JOIN ideas.ideas i ON i.id = it.idea_id AND i.workspace_id = it.workspace_id
    WHERE it.workspace_id = %s AND i.status <> 'deleted' GROUP BY it.tag_id) c ON c.tag_id = t.id
 WHERE t.workspace_id = %s ORDER BY t.name, t.id) x"""

PRODUCTS_SQL = """SELECT row_to_json(x)::text FROM (SELECT p.id, p.name, p.parent_id AS "parentId",
  coalesce(c.n, 0) AS "ideaCount"
 FROM ideas.products p LEFT JOIN (
   SELECT i.product_id, count(*) AS n FROM ideas.ideas i
    WHERE i.workspace_id = %s AND i.product_id IS NOT NULL AND i.status <> 'deleted'
    GROUP BY i.product_id) c ON c.product_id = p.id
 WHERE p.workspace_id = %s ORDER BY p.name, p.id) x"""

MEMBERS_SQL = """SELECT row_to_json(x)::text FROM (SELECT m.id, m.name, m.email, m.role,
  m.dashboard_access AS "dashboardAccess", ims_json_ts(m.last_active_at) AS "lastActiveAt"
 FROM ideas.members m WHERE m.workspace_id = %s ORDER BY m.name, m.id) x"""

Reader = Callable[[aiopg.Cursor, Caller], Awaitable[list[str]]]
# The statuses that do not count as active: the ends of an idea's life, and deleted.
INACTIVE_STATUSES = ("shipped", "rejected", "archived", "duplicate", "deleted")


async def _rows(cur: aiopg.Cursor, sql: str, params: tuple[Any, ...]) -> list[str]:
    await cur.execute(sql, params)
    return [r[0] for r in await cur.fetchall()]


async def stages(cur: aiopg.Cursor, who: Caller) -> list[str]:
    return await _rows(cur, STAGES_SQL, (who.workspace_id,))


async def tags(cur: aiopg.Cursor, who: Caller) -> list[str]:
    return await _rows(cur, TAGS_SQL, (who.workspace_id, who.workspace_id))


async def products(cur: aiopg.Cursor, who: Caller) -> list[str]:
    return await _rows(cur, PRODUCTS_SQL, (who.workspace_id, who.workspace_id))


async def members(cur: aiopg.Cursor, who: Caller) -> list[str]:
    return await _rows(cur, MEMBERS_SQL, (who.workspace_id,))


async def info(cur: aiopg.Cursor, who: Caller) -> dict[str, Any]:
    rows = await db.fetchall(
        cur,
        "SELECT status, n FROM ideas.status_counts WHERE workspace_id = %s",
        (who.workspace_id,),
    )
    counts = {r["status"]: r["n"] for r in rows}
    now = datetime.now(UTC)
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    this_month = await db.fetchval(
        cur,
        "SELECT count(*) FROM ideas.ideas WHERE workspace_id = %s AND created_at >= %s"
        " AND status <> 'deleted'",
        (who.workspace_id, month),
    )
    return {
        "id": who.workspace_id,
        "name": who.workspace_name,
        "shortCode": who.short_code,
        "plan": who.plan,
        "ideasTotal": sum(n for s, n in counts.items() if s != "deleted"),
        "ideasThisMonth": this_month,
        "activeIdeas": sum(n for s, n in counts.items() if s not in INACTIVE_STATUSES),
        "defaultDestination": who.default_destination,
        "inboxMode": who.inbox_mode,
        "publicSubmissionEnabled": who.public_submission,
        "slug": who.slug,
    }
