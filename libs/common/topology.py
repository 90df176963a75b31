"""Every consumer queue and the routing keys it binds, declared by every process that connects.

Routing keys are event types (`idea.created`, `customer.updated`, ...). Each consumer binds only
what it needs.
"""

QUEUES: dict[str, list[str]] = {
    # The webhooks dispatcher turns every public event into deliveries.
    "webhooks": ["idea.*", "customer.*"],
    # The ideas service projects customers' ARR and links onto ideas.
    "ideas": ["customer.*", "link.*"],
    # The customers service links a merged duplicate's customers to its primary (and unlinks
    # them on unmerge).
    "customers": ["merge.*"],
    # The ideas service keeps each idea's embedding (similar ideas) current.
    "similar": ["idea.created", "idea.updated", "idea.status_changed", "idea.deleted"],
}
