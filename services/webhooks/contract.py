"""The webhooks service's public routes."""

from libs.common.contract import API, Route

S = "webhooks"
W = f"{API}/webhooks"

ROUTES = [
    Route("GET", W, S, "list_webhooks", "webhooks:manage", "List webhook subscriptions",
          tags=("Webhooks",)),
    Route("POST", W, S, "create_webhook", "webhooks:manage", "Create a webhook subscription",
          tags=("Webhooks",)),
    Route("GET", f"{W}/{{id}}", S, "get_webhook", "webhooks:manage",
          "A subscription with its recent deliveries", tags=("Webhooks",)),
    Route("DELETE", f"{W}/{{id}}", S, "delete_webhook", "webhooks:manage",
          "Delete a subscription", tags=("Webhooks",)),
    Route("POST", f"{API}/automation/webhooks/subscribe", S, "automation_subscribe",
          "webhooks:manage", "Subscribe a hook to new ideas (automation API)", automation=True,
          success_status=201, tags=("Automation",)),
    Route("DELETE", f"{API}/automation/webhooks/subscribe/{{id}}", S, "automation_unsubscribe",
          "webhooks:manage", "Remove a hook (automation API)", automation=True,
          tags=("Automation",)),
]
