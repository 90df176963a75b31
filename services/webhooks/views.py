"""HTTP handlers of the webhooks service, named by the route table's operation ids."""

from __future__ import annotations

import math
import uuid

from aiohttp import web

from libs.api.webhooks.schemas import (
    AutomationSubscribeRequest,
    CreateWebhookRequest,
    DeliveryListQuery,
    RotateSecretRequest,
    UpdateWebhookRequest,
)
from libs.common import db
from libs.common.errors import (
    AutomationLimitReached,
    LimitExceeded,
    NotFound,
    RateLimited,
    ValidationFailed,
)
from libs.common.messaging import event_body
from libs.common.pagination import page_info
from libs.common.validation import parse_body, parse_query, path_uuid
from libs.common.web import PG_POOL, caller, data_response, json_response

from . import deliveries
from . import subscriptions as subs
from .dispatcher import Dispatcher, PingRefused
from .settings import SETTINGS
from .store import Claimed, Secrets
from .targets import check_target_url, host_key

PINGER = web.AppKey("pinger", Dispatcher)  # set by the app: test pings share its slots

_FULL = {
    "workspace": "This workspace has every delivery connection of its share in use",
    "host": "The target host has every delivery connection of its share in use",
    "service": "The webhooks service has every delivery connection in use",
}

MAX_SUBSCRIPTIONS = 10
MAX_HOOKS = 50


async def list_webhooks(request: web.Request) -> web.Response:
    who = caller(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        rows = await subs.list_main(cur, who.workspace_id)
    return data_response([subs.to_api(r) for r in rows])


async def create_webhook(request: web.Request) -> web.Response:
    who = caller(request)
    body = await parse_body(request, CreateWebhookRequest)
    check_main_target(request, body.targetUrl)
    async with db.transaction(request.app[PG_POOL]) as cur:
        await subs.lock_workspace(cur, who.workspace_id, subs.MAIN)
        if await subs.count(cur, who.workspace_id, subs.MAIN) >= MAX_SUBSCRIPTIONS:
            raise LimitExceeded(
                f"A workspace has at most {MAX_SUBSCRIPTIONS} webhook subscriptions"
            )
        row = await subs.insert(
            cur, who.workspace_id, subs.MAIN, body.name, body.targetUrl, list(body.events)
        )
    return data_response(subs.to_api(row, reveal=True))


def check_main_target(request: web.Request, url: str) -> None:
    settings = request.app[SETTINGS]
    schemes = ("https", "http") if settings.webhook_allow_http else ("https",)
    check_target_url(
        url,
        field="targetUrl",
        schemes=schemes,
        allow_private=settings.webhook_allow_private_targets,
    )


async def update_webhook(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    body = await parse_body(request, UpdateWebhookRequest)
    fields = body.model_fields_set
    changes: dict[str, object] = {}
    if "name" in fields:
        changes["name"] = body.name
    if "targetUrl" in fields:
        check_main_target(request, body.targetUrl)
        changes["target_url"] = body.targetUrl
    if "events" in fields:
        changes["events"] = list(body.events)
    if "isActive" in fields:
        changes["is_active"] = body.isActive
    new_host = host_key(body.targetUrl) if "targetUrl" in fields else None
    async with db.transaction(request.app[PG_POOL]) as cur:
        row = await subs.update(cur, who.workspace_id, sub_id, changes, new_host)
    if row is None:
        raise NotFound("Webhook subscription not found")
    return data_response(subs.to_api(row))


async def rotate_webhook_secret(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    body = await parse_body(request, RotateSecretRequest, optional=True)
    async with db.transaction(request.app[PG_POOL]) as cur:
        row = await subs.rotate(cur, who.workspace_id, sub_id, body.expiresInSeconds)
    if row is None:
        raise NotFound("Webhook subscription not found")
    return data_response(subs.to_api(row, reveal=True))


async def test_webhook(request: web.Request) -> web.Response:
    """One signed POST now; not a delivery: nothing about the subscription changes."""
    who = caller(request)
    sub_id = path_uuid(request)
    async with db.cursor(request.app[PG_POOL]) as cur:
        row = await subs.get_for_signing(cur, who.workspace_id, sub_id)
    if row is None:
        raise NotFound("Webhook subscription not found")
    event_id = uuid.uuid4()
    body = event_body(event_id, "webhook.test", who.workspace_id, {"subscriptionId": str(sub_id)})
    ping = Claimed(
        id=event_id,
        workspace_id=str(who.workspace_id),
        subscription_id=sub_id,
        kind=subs.MAIN,
        event_type="webhook.test",
        target_url=row["target_url"],
        target_host=host_key(row["target_url"]),
        secrets=Secrets(
            current=row["secret"],
            previous=row["previous_secret"],
            previous_expires_at=row["previous_expires_at"],
        ),
        body=body,
        attempt_count=0,
        lease=uuid.uuid4(),
    )
    # The connection went back to the pool above: the ping waits on the receiver holding
    # only its slots in the shares of deliveries, or is refused at once.
    try:
        answer = await request.app[PINGER].ping(ping)
    except PingRefused as refused:
        raise ping_refused(refused.share, request.app[SETTINGS].webhook_timeout_s) from None
    return data_response(
        {
            "success": answer.ok,
            "statusCode": answer.status_code,
            "durationMs": answer.duration_ms,
            "error": answer.error,
        }
    )


def ping_refused(share: str, timeout_s: float) -> RateLimited:
    """429 for a ping with no free slot: by `Retry-After` (the receiver timeout) every
    attempt and ping holding the share has ended."""
    return RateLimited(
        f"{_FULL[share]} (test pings and deliveries); the ping was not sent: retry after"
        " Retry-After seconds",
        headers={"Retry-After": str(max(1, math.ceil(timeout_s)))},
    )


async def list_webhook_deliveries(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    q = parse_query(request, DeliveryListQuery)
    async with db.cursor(request.app[PG_POOL]) as cur:
        if await subs.get(cur, who.workspace_id, sub_id, subs.MAIN) is None:
            raise NotFound("Webhook subscription not found")
        items, next_cursor, has_more = await deliveries.page(
            cur,
            request.app[SETTINGS].cursor_secrets,
            who.workspace_id,
            sub_id,
            q.limit,
            q.cursor,
            q.status,
            q.event_type,
        )
    return json_response({"data": items, "pagination": page_info(q.limit, has_more, next_cursor)})


async def get_webhook_delivery(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    delivery_id = path_uuid(request, "deliveryId")
    async with db.transaction(request.app[PG_POOL], snapshot=True) as cur:
        if await subs.get(cur, who.workspace_id, sub_id, subs.MAIN) is None:
            raise NotFound("Webhook subscription not found")
        out = await deliveries.detail(cur, who.workspace_id, sub_id, delivery_id)
    return data_response(out)


async def redeliver_webhook_delivery(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    delivery_id = path_uuid(request, "deliveryId")
    async with db.transaction(request.app[PG_POOL]) as cur:
        out = await deliveries.redeliver(cur, who.workspace_id, sub_id, delivery_id)
    return data_response(out, status=202)


async def get_webhook(request: web.Request) -> web.Response:
    who = caller(request)
    sub_id = path_uuid(request)
    # One snapshot: the counters and the deliveries they count are read as of one moment.
    async with db.transaction(request.app[PG_POOL], snapshot=True) as cur:
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
    check_target_url(
        body.hookUrl,
        field="hookUrl",
        schemes=("https",),
        allow_private=settings.webhook_allow_private_targets,
    )
    if body.event != subs.NEW_IDEA:
        raise ValidationFailed("event must be new_idea", field="event")
    async with db.transaction(request.app[PG_POOL]) as cur:
        await subs.lock_workspace(cur, who.workspace_id, subs.AUTOMATION)
        if await subs.count(cur, who.workspace_id, subs.AUTOMATION) >= MAX_HOOKS:
            raise AutomationLimitReached(f"A workspace has at most {MAX_HOOKS} automation hooks")
        row = await subs.insert(
            cur, who.workspace_id, subs.AUTOMATION, None, body.hookUrl, [subs.NEW_IDEA]
        )
    return json_response(
        {"id": row["id"], "hookUrl": row["target_url"], "event": subs.NEW_IDEA}, status=201
    )


async def automation_unsubscribe(request: web.Request) -> web.Response:
    who = caller(request)
    hook_id = path_uuid(request)
    async with db.transaction(request.app[PG_POOL]) as cur:
        if not await subs.delete(cur, who.workspace_id, hook_id, subs.AUTOMATION):
            raise NotFound("Hook not found")
    return json_response({"success": True})
