"""The route table as the tests see it: the one place that says where it lives."""

from services.gateway.routing import ROUTE_TABLE

__all__ = ["ROUTE_TABLE"]
