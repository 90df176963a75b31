"""HTTP handlers of the analytics service, named by the route table's operation ids.

Each report runs its queries in one read-only repeatable-read transaction, so that its numbers
come from one snapshot and agree with each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import aiopg
from aiohttp import web

from libs.api.analytics.schemas import (
    DatedExportQuery,
    DecisionsQuery,
    ExportQuery,
    IdeasExportQuery,
    IdeasOverTimeQuery,
    NoQuery,
    RangeQuery,
    SignalsExportQuery,
    SignalsQuery,
)
from libs.common import db
from libs.common.errors import ServiceUnavailable
from libs.common.validation import parse_query
from libs.common.web import PEERS, PG_POOL, caller, data_response

from . import assemble, exports
from .periods import resolve
from .settings import SETTINGS
from .slots import ExportSlots
from .stream import Bounds, stream_export

EXPORT_SLOTS = web.AppKey("export_slots", ExportSlots)


async def _report(
    request: web.Request, build: Callable[[aiopg.Cursor], Awaitable[Any]]
) -> web.Response:
    async with db.transaction(request.app[PG_POOL], snapshot=True) as cur:
        return data_response(await build(cur))


async def analytics_summary(request: web.Request) -> web.Response:
    parse_query(request, NoQuery)
    ws = caller(request).workspace_id
    return await _report(request, lambda cur: assemble.summary(cur, ws))


async def analytics_ideas_over_time(request: web.Request) -> web.Response:
    q = parse_query(request, IdeasOverTimeQuery)
    rng, ws = resolve(q.start, q.end), caller(request).workspace_id
    return await _report(
        request, lambda cur: assemble.ideas_over_time(cur, ws, rng, q.period, q.group_by)
    )


async def analytics_decisions(request: web.Request) -> web.Response:
    q = parse_query(request, DecisionsQuery)
    rng, ws = resolve(q.start, q.end), caller(request).workspace_id
    return await _report(request, lambda cur: assemble.decisions(cur, ws, rng, q.period))


async def analytics_funnel(request: web.Request) -> web.Response:
    q = parse_query(request, RangeQuery)
    rng, ws = resolve(q.start, q.end), caller(request).workspace_id
    return await _report(request, lambda cur: assemble.funnel(cur, ws, rng))


async def analytics_signals(request: web.Request) -> web.Response:
    q = parse_query(request, SignalsQuery)
    rng, ws = resolve(q.start, q.end), caller(request).workspace_id
    return await _report(request, lambda cur: assemble.signals(cur, ws, rng, q.period))


async def analytics_roadmap(request: web.Request) -> web.Response:
    parse_query(request, NoQuery)
    ws = caller(request).workspace_id
    async with db.transaction(request.app[PG_POOL], snapshot=True) as cur:
        data = await assemble.roadmap(cur, ws)
    if not data["stages"]:
        # The ideas service makes a workspace's default stages on its first request to it;
        # ask it (a read) so that the report shows them as GET /roadmap/stages would.
        await _touch_ideas(request)
        async with db.transaction(request.app[PG_POOL], snapshot=True) as cur:
            data = await assemble.roadmap(cur, ws)
    return data_response(data)


async def _touch_ideas(request: web.Request) -> None:
    try:
        await request.app[PEERS].call(
            caller(request),
            "ideas",
            "GET",
            "/api/v1/roadmap/stages",
            timeout=aiohttp.ClientTimeout(total=5),
        )
    except ServiceUnavailable:
        pass  # the report still answers, without stages


async def analytics_revenue_impact(request: web.Request) -> web.Response:
    parse_query(request, NoQuery)
    ws = caller(request).workspace_id
    return await _report(request, lambda cur: assemble.revenue_impact(cur, ws))


async def analytics_categories(request: web.Request) -> web.Response:
    q = parse_query(request, RangeQuery)
    rng, ws = resolve(q.start, q.end), caller(request).workspace_id
    return await _report(request, lambda cur: assemble.categories(cur, ws, rng))


async def _export(
    request: web.Request, export: exports.Export, q: ExportQuery
) -> web.StreamResponse:
    s = request.app[SETTINGS]
    with request.app[EXPORT_SLOTS].hold(caller(request).workspace_id):
        return await stream_export(
            request,
            request.app[PG_POOL],
            export,
            q,
            Bounds(s.export_deadline_s, s.export_write_timeout_s),
        )


async def export_ideas(request: web.Request) -> web.StreamResponse:
    q = parse_query(request, IdeasExportQuery)
    exports.check_range(q)
    return await _export(request, exports.ideas(caller(request).workspace_id, q), q)


async def export_customers(request: web.Request) -> web.StreamResponse:
    q = parse_query(request, ExportQuery)
    return await _export(request, exports.customers(caller(request).workspace_id, q), q)


async def export_decisions(request: web.Request) -> web.StreamResponse:
    q = parse_query(request, DatedExportQuery)
    exports.check_range(q)
    return await _export(request, exports.decisions(caller(request).workspace_id, q), q)


async def export_signals(request: web.Request) -> web.StreamResponse:
    q = parse_query(request, SignalsExportQuery)
    exports.check_range(q)
    return await _export(request, exports.signals(caller(request).workspace_id, q), q)
