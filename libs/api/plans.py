"""Plans: requests per minute, automation quota, and which features they include (docs/running.md)."""

from __future__ import annotations

PLANS = ("starter", "pro", "growth", "scale", "enterprise")
RATE_PER_MINUTE = {"starter": 60, "pro": 120, "growth": 300, "scale": 600, "enterprise": 1200}
# Ideas per UTC month created through the automation API; None is unlimited.
AUTOMATION_QUOTA: dict[str, int | None] = {
    "starter": 30,
    "pro": 500,
    "growth": None,
    "scale": None,
    "enterprise": None,
}
# Analytics and export are not part of starter.
GATED_PLANS = frozenset({"starter"})
