"""The public API as data: routes, models, plans, event payloads (docs/architecture.md)."""
