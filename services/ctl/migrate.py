"""`ideasctl migrate`: every service's schema, in the order they apply."""

from __future__ import annotations

from libs.common import migrations
from services.analytics.schema import SCHEMA as ANALYTICS
from services.customers.schema import SCHEMA as CUSTOMERS
from services.gateway.schema import SCHEMA as GATEWAY
from services.ideas.schema import SCHEMA as IDEAS
from services.similar.schema import SCHEMA as SIMILAR
from services.webhooks.schema import SCHEMA as WEBHOOKS

# Order matters: the analytics role is granted read access to schemas that exist by then (the
# similar service's copy is none of its reports').
SCHEMAS = (GATEWAY, IDEAS, CUSTOMERS, WEBHOOKS, ANALYTICS, SIMILAR)


def migrate(dsn: str) -> list[str]:
    """Apply what is not applied yet; return the names applied now."""
    return migrations.migrate(dsn, SCHEMAS)
