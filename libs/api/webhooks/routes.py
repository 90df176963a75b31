"""The webhooks service's public routes."""

from libs.api.route import API, Route

from .schemas import (AutomationHook, AutomationSubscribeRequest, AutomationUnsubscribed,
                     CreateWebhookRequest, WebhookDeletedResult, WebhookSubscriptionDetailResult,
                     WebhookSubscriptionList, WebhookSubscriptionResult)

S = "webhooks"
W = f"{API}/webhooks"

ROUTES = [
    Route("GET", W, S, "list_webhooks", "webhooks:manage", "List webhook subscriptions",
          responses={200: WebhookSubscriptionList}, tags=("Webhooks",),
          description="Oldest first; secrets masked."),
    Route("POST", W, S, "create_webhook", "webhooks:manage", "Create a webhook subscription",
          body=CreateWebhookRequest, responses={200: WebhookSubscriptionResult},
          tags=("Webhooks",), secret_fields=("data.secret",),
          description="The only response that shows the full `secret`. At most 10 per "
                      "workspace (422 `limit_exceeded`)."),
    Route("GET", f"{W}/{{id}}", S, "get_webhook", "webhooks:manage",
          "A subscription with its recent deliveries",
          responses={200: WebhookSubscriptionDetailResult}, tags=("Webhooks",),
          description="The subscription (secret masked) with its 20 newest deliveries, newest "
                      "first."),
    Route("DELETE", f"{W}/{{id}}", S, "delete_webhook", "webhooks:manage",
          "Delete a subscription", responses={200: WebhookDeletedResult}, tags=("Webhooks",),
          description="Stops its pending deliveries."),
    Route("POST", f"{API}/automation/webhooks/subscribe", S, "automation_subscribe",
          "webhooks:manage", "Subscribe a hook to new ideas (automation API)", automation=True,
          body=AutomationSubscribeRequest, responses={201: AutomationHook},
          success_status=201, tags=("Automation",),
          description="`hookUrl` must be https. At most 50 hooks per workspace (403)."),
    Route("DELETE", f"{API}/automation/webhooks/subscribe/{{id}}", S, "automation_unsubscribe",
          "webhooks:manage", "Remove a hook (automation API)", automation=True,
          responses={200: AutomationUnsubscribed}, tags=("Automation",),
          description="Stops deliveries to the hook. An unknown id answers 404 `not_found`."),
]
