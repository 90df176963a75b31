"""The customers service's settings: the common core (libs/common/settings.py); its own go here."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import Settings


@dataclass(frozen=True)
class CustomersSettings(Settings):
    pass
