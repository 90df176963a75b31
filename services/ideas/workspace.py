"""Workspace-level reads: info, roadmap stages, tags, products, members (JSON built in SQL).

Idea counts leave deleted ideas out. Workspace name, plan and inbox mode come from the caller
headers the gateway sets; the gateway's admin commands set no short code, slug or default
destination, so those are null and public submission is off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

import aiopg

from libs.common import db
from libs.common.caller import Caller

STAGES_SQL = """SELECT coalesce(json_agg(json_build_object('id', s.id, 'name', s.name,
  'slug', s.slug, 'color', s.color, 'position', s.position, 'isDefault', s.is_default,
  'ideaCount', (SELECT count(*) FROM ideas.ideas i WHERE i.workspace_id = s.workspace_id
                  AND i.roadmap_stage_id = s.id AND i.status <> 'deleted'),
  'createdAt', s.created_at) ORDER BY s.position, s.id), '[]')::text
 FROM ideas.roadmap_stages s WHERE s.workspace_id = %s"""

TAGS_SQL = """SELECT coalesce(json_agg(json_build_object('id', t.id, 'name', t.name,
  'color', t.color, 'ideaCount', coalesce(c.n, 0)) ORDER BY t.name, t.id), '[]')::text
 FROM ideas.tags t LEFT JOIN (
   SELECT it.tag_id, count(*) AS n FROM ideas.idea_tags it
     JOIN ideas.ideas i ON i.id = it.idea_id AND i.workspace_id = it.workspace_id
    WHERE it.workspace_id = %s AND i.status <> 'deleted' GROUP BY it.tag_id) c ON c.tag_id = t.id
 WHERE t.workspace_id = %s"""

PRODUCTS_SQL = """SELECT coalesce(json_agg(json_build_object('id', p.id, 'name', p.name,
  'parentId', p.parent_id, 'ideaCount', coalesce(c.n, 0)) ORDER BY p.name, p.id), '[]')::text
 FROM ideas.products p LEFT JOIN (
   SELECT i.product_id, count(*) AS n FROM ideas.ideas i
    WHERE i.workspace_id = %s AND i.product_id IS NOT NULL AND i.status <> 'deleted'
    GROUP BY i.product_id) c ON c.product_id = p.id
 WHERE p.workspace_id = %s"""

MEMBERS_SQL = """SELECT coalesce(json_agg(json_build_object('id', m.id, 'name', m.name,
  'email', m.email, 'role', m.role, 'dashboardAccess', m.dashboard_access,
  'lastActiveAt', m.last_active_at) ORDER BY m.name, m.id), '[]')::text
 FROM ideas.members m WHERE m.workspace_id = %s"""

Reader = Callable[[aiopg.Cursor, Caller], Awaitable[str]]
CLOSED = ("shipped", "rejected", "archived", "duplicate", "deleted")


async def stages(cur: aiopg.Cursor, who: Caller) -> str:
    return str(await db.fetchval(cur, STAGES_SQL, (who.workspace_id,)))


async def tags(cur: aiopg.Cursor, who: Caller) -> str:
    return str(await db.fetchval(cur, TAGS_SQL, (who.workspace_id, who.workspace_id)))


async def products(cur: aiopg.Cursor, who: Caller) -> str:
    return str(await db.fetchval(cur, PRODUCTS_SQL, (who.workspace_id, who.workspace_id)))


async def members(cur: aiopg.Cursor, who: Caller) -> str:
    return str(await db.fetchval(cur, MEMBERS_SQL, (who.workspace_id,)))


async def info(cur: aiopg.Cursor, who: Caller) -> dict[str, Any]:
    rows = await db.fetchall(cur, "SELECT status, n FROM ideas.status_counts"
                                  " WHERE workspace_id = %s", (who.workspace_id,))
    counts = {r["status"]: r["n"] for r in rows}
    now = datetime.now(timezone.utc)
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    this_month = await db.fetchval(
        cur, "SELECT count(*) FROM ideas.ideas WHERE workspace_id = %s AND created_at >= %s"
             " AND status <> 'deleted'", (who.workspace_id, month))
    return {
        "id": who.workspace_id, "name": who.workspace_name, "shortCode": None, "plan": who.plan,
        "ideasTotal": sum(n for s, n in counts.items() if s != "deleted"),
        "ideasThisMonth": this_month,
        "activeIdeas": sum(n for s, n in counts.items() if s not in CLOSED),
        "defaultDestination": None, "inboxMode": who.inbox_mode,
        "publicSubmissionEnabled": False, "slug": None,
    }

