"""Every consumer queue and the routing keys it binds, declared by every process that connects.

Routing keys are event types (`idea.created`, `customer.updated`, ...). Each consumer binds only
what it needs.
"""

QUEUES: dict[str, list[str]] = {
    # The webhooks dispatcher turns every public event into deliveries.
    "webhooks": ["idea.*", "customer.*"],
    # The ideas service projects customers' ARR and links onto ideas.
    "ideas": ["customer.*", "link.*"],
}
