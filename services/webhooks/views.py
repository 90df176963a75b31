"""HTTP handlers of the webhooks service, named by the route table's operation ids."""

from __future__ import annotations

from aiohttp import web

from libs.common import db
from libs.common.errors import Forbidden, LimitExceeded, NotFound, ValidationFailed
from libs.common.validation import parse_body, path_uuid
from libs.common.web import PG_POOL, SETTINGS, caller, data_response, json_response

from . import subscriptions as subs
from libs.api.webhooks.schemas import AutomationSubscribeRequest, CreateWebhookRequest
from .targets import check_target_url

MAX_SUBSCRIPTIONS = 10
MAX_HOOKS = 50


async def list_webhooks(request: web.Request) -> web.Response:
    who = caller(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await subs.list_main(cur, who.workspace_id)
    return data_response([subs.to_api(r) for r in rows])


async def create_webhook(request: web.Request) -> web.Response:
    who = caller(request)
    settings = request.app[SETTINGS]
    body = await parse_body(request, CreateWebhookRequest)
    schemes = ("https", "http") if settings.webhook_allow_http else ("https",)
    check_target_url(body.targetUrl, field="targetUrl", schemes=schemes,
                     allow_private=settings.webhook_allow_private_targets)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await subs.lock_workspace(cur, who.workspace_id, subs.MAIN)
        if await subs.count(cur, who.workspace_id, subs.MAIN) >= MAX_SUBSCRIPTIONS:
            raise LimitExceeded(f"A workspace has at most {MAX_SUBSCRIPTIONS} "
                                "webhook subscriptions")
        row = await subs.insert(cur, who.workspace_id, subs.MAIN, body.name, body.targetUrl,
                                list(body.events))
    return data_response(subs.to_api(row, reveal=True))


async def get_webhook(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        row = await subs.get(cur, who.workspace_id, sub_id, subs.MAIN)
        if row is None:
            raise NotFound("Webhook subscription not found")
        deliveries = await subs.recent_deliveries(cur, sub_id)
    out = subs.to_api(row)
    out["recentDeliveries"] = [subs.delivery_to_api(d) for d in deliveries]
    return data_response(out)


async def delete_webhook(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        if not await subs.delete(cur, who.workspace_id, sub_id, subs.MAIN):
            raise NotFound("Webhook subscription not found")
    return data_response({"id": sub_id, "deleted": True})


async def automation_subscribe(request: web.Request) -> web.Response:
    who = caller(request)
    settings = request.app[SETTINGS]
    body = await parse_body(request, AutomationSubscribeRequest)
    # Hooks are https only, whatever WEBHOOK_ALLOW_HTTP says (the spec's rule 3).
    check_target_url(body.hookUrl, field="hookUrl", schemes=("https",),
                     allow_private=settings.webhook_allow_private_targets)
    if body.event != subs.NEW_IDEA:
        raise ValidationFailed("event must be new_idea", field="event")
    async with db.transaction(request.app[PG_POOL]) as cur:
        await subs.lock_workspace(cur, who.workspace_id, subs.AUTOMATION)
        if await subs.count(cur, who.workspace_id, subs.AUTOMATION) >= MAX_HOOKS:
            raise Forbidden(f"A workspace has at most {MAX_HOOKS} automation hooks")
        row = await subs.insert(cur, who.workspace_id, subs.AUTOMATION, None, body.hookUrl,
                                [subs.NEW_IDEA])
    return json_response({"id": row["id"], "hookUrl": row["target_url"], "event": subs.NEW_IDEA},
                         status=201)


async def automation_unsubscribe(request: web.Request) -> web.Response:
    who = caller(request)
    hook_id = path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        if not await subs.delete(cur, who.workspace_id, hook_id, subs.AUTOMATION):
            raise NotFound("Hook not found")
    return json_response({"success": True})
