"""The webhooks service's public routes."""

from libs.api.route import API, Route

from .schemas import (
    AutomationHook,
    AutomationSubscribeRequest,
    AutomationUnsubscribed,
    CreateWebhookRequest,
    DeliveryListQuery,
    RotateSecretRequest,
    UpdateWebhookRequest,
    WebhookDeletedResult,
    WebhookDeliveryDetailResult,
    WebhookDeliveryPage,
    WebhookDeliveryResult,
    WebhookSubscriptionDetailResult,
    WebhookSubscriptionList,
    WebhookSubscriptionResult,
    WebhookTestResultEnvelope,
)

SERVICE = "webhooks"
WEBHOOKS_PATH = f"{API}/webhooks"

ROUTES = [
    Route(
        "GET",
        WEBHOOKS_PATH,
        SERVICE,
        "list_webhooks",
        "webhooks:manage",
        "List webhook subscriptions",
        responses={200: WebhookSubscriptionList},
        tags=("Webhooks",),
        description="Oldest first; secrets masked.",
    ),
    Route(
        "POST",
        WEBHOOKS_PATH,
        SERVICE,
        "create_webhook",
        "webhooks:manage",
        "Create a webhook subscription",
        body=CreateWebhookRequest,
        responses={200: WebhookSubscriptionResult},
        tags=("Webhooks",),
        secret_fields=("data.secret",),
        description="The only response that shows the full `secret`. At most 10 per "
        "workspace (422 `limit_exceeded`).",
    ),
    Route(
        "GET",
        f"{WEBHOOKS_PATH}/{{id}}",
        SERVICE,
        "get_webhook",
        "webhooks:manage",
        "A subscription with its recent deliveries",
        responses={200: WebhookSubscriptionDetailResult},
        tags=("Webhooks",),
        description="The subscription (secret masked) with its 20 newest deliveries, newest first.",
    ),
    Route(
        "DELETE",
        f"{WEBHOOKS_PATH}/{{id}}",
        SERVICE,
        "delete_webhook",
        "webhooks:manage",
        "Delete a subscription",
        responses={200: WebhookDeletedResult},
        tags=("Webhooks",),
        description="Stops its pending deliveries.",
    ),
    Route(
        "PATCH",
        f"{WEBHOOKS_PATH}/{{id}}",
        SERVICE,
        "update_webhook",
        "webhooks:manage",
        "Update, pause or resume a subscription",
        body=UpdateWebhookRequest,
        responses={200: WebhookSubscriptionResult},
        tags=("Webhooks",),
        description="Any of `name`, `targetUrl`, `events`, `isActive`, with the create body's "
        "rules; the history is kept. `isActive: false` pauses: pending deliveries "
        "end `failed` and events while paused are never delivered, also after "
        "resuming. `isActive: true` resumes and resets `failureCount` to 0. "
        "The secret is masked.",
    ),
    Route(
        "POST",
        f"{WEBHOOKS_PATH}/{{id}}/test",
        SERVICE,
        "test_webhook",
        "webhooks:manage",
        "Send a test ping now",
        responses={200: WebhookTestResultEnvelope},
        tags=("Webhooks",),
        description="One signed POST of a `webhook.test` event "
        "(`{id, type, createdAt, workspaceId, data: {subscriptionId}}`) with every "
        "header and signature of a delivery; answered within the receiver timeout "
        "plus 2 s. Works on a paused subscription; not a delivery: it changes no "
        "counter, time, error or state of the subscription (a 410 deactivates "
        "nothing). A refused target is `success: false` with an `error`. A ping holds "
        "a delivery connection while it waits, within the shares deliveries have (the "
        "workspace's, the target host's): when one has no free connection the ping is not "
        "sent and the answer is 429 `rate_limited` at once, with `Retry-After` (the receiver "
        "timeout: by then every attempt holding the share has ended).",
    ),
    Route(
        "POST",
        f"{WEBHOOKS_PATH}/{{id}}/rotate-secret",
        SERVICE,
        "rotate_webhook_secret",
        "webhooks:manage",
        "Rotate the signing secret",
        body=RotateSecretRequest,
        body_required=False,
        responses={200: WebhookSubscriptionResult},
        tags=("Webhooks",),
        secret_fields=("data.secret",),
        description="A new secret, shown in full this once. Every attempt from now on is "
        "signed with it; until `expiresInSeconds` have passed the previous secret "
        "signs too (a second digest in `X-Service-Signature`, a second `v1,` entry "
        "in `webhook-signature`, the new secret's first). Rotating again in that "
        "time drops the older previous secret: at most two sign.",
    ),
    Route(
        "GET",
        f"{WEBHOOKS_PATH}/{{id}}/deliveries",
        SERVICE,
        "list_webhook_deliveries",
        "webhooks:manage",
        "List a subscription's deliveries",
        query=DeliveryListQuery,
        responses={200: WebhookDeliveryPage},
        tags=("Webhooks",),
        description="Newest first, keyset pages; filter by `status` and `event_type`.",
    ),
    Route(
        "GET",
        f"{WEBHOOKS_PATH}/{{id}}/deliveries/{{deliveryId}}",
        SERVICE,
        "get_webhook_delivery",
        "webhooks:manage",
        "A delivery with its payload and attempts",
        responses={200: WebhookDeliveryDetailResult},
        tags=("Webhooks",),
        description="`payload` is the JSON body sent on every attempt, whatever it holds "
        "(customer records included): what the subscription's receiver gets, so this scope "
        "reads it; `attempts` lists each attempt kept (see the retention period) with its "
        "status code, error, duration and time.",
    ),
    Route(
        "POST",
        f"{WEBHOOKS_PATH}/{{id}}/deliveries/{{deliveryId}}/redeliver",
        SERVICE,
        "redeliver_webhook_delivery",
        "webhooks:manage",
        "Send a delivery again",
        responses={202: WebhookDeliveryResult},
        success_status=202,
        tags=("Webhooks",),
        description="A `delivered` or `failed` delivery of an active subscription becomes "
        "`pending`, due now, with the whole retry schedule ahead; `attemptCount` "
        "goes on and `X-Service-Delivery` stays the same. A pending delivery, or "
        "one of a paused subscription: 409 `conflict`.",
    ),
    Route(
        "POST",
        f"{API}/automation/webhooks/subscribe",
        SERVICE,
        "automation_subscribe",
        "webhooks:manage",
        "Subscribe a hook to new ideas (automation API)",
        automation=True,
        body=AutomationSubscribeRequest,
        responses={201: AutomationHook},
        success_status=201,
        tags=("Automation",),
        description="`hookUrl` must be https. At most 50 hooks per workspace (403).",
    ),
    Route(
        "DELETE",
        f"{API}/automation/webhooks/subscribe/{{id}}",
        SERVICE,
        "automation_unsubscribe",
        "webhooks:manage",
        "Remove a hook (automation API)",
        automation=True,
        responses={200: AutomationUnsubscribed},
        tags=("Automation",),
        description="Stops deliveries to the hook. An unknown id answers 404 `not_found`.",
    ),
]
