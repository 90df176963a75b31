"""The mcp service's settings: the common core (libs/common/settings.py); its own go here."""

from __future__ import annotations

from libs.common.settings import Settings


class McpSettings(Settings):
    pass
