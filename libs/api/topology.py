"""Every consumer queue and the routing keys it binds, each declared by the service that
consumes it (`libs/api/<service>/queue.py`), declared by every process that connects.

Routing keys are event types (`idea.created`, `customer.updated`, ...). Each consumer binds only
what it needs.
"""

from .customers.queue import QUEUE as CUSTOMERS
from .ideas.queue import QUEUE as IDEAS
from .similar.queue import QUEUE as SIMILAR
from .webhooks.queue import QUEUE as WEBHOOKS

QUEUES: dict[str, tuple[str, ...]] = {**WEBHOOKS, **IDEAS, **CUSTOMERS, **SIMILAR}
