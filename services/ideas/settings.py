"""The ideas service's settings: the common core (libs/common/settings.py) and the automation
API's meaning rule's threshold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Settings, SettingsError, env_float


def _fraction(env: dict[str, str], name: str, default: float) -> float:
    value = env_float(env, name, default)
    if value > 1:
        raise SettingsError(f"{name} must be a number from 0 to 1, got {value!r}")
    return value


# The automation API's meaning rule's threshold, a similarity as `POST /ideas/similar` answers
# it (the similar service's), chosen on the labeled set's tuning part (docs/similar.md).
DUPLICATE_SIMILARITY = 0.48


@dataclass(frozen=True)
class IdeasSettings(Settings):
    # The automation API's meaning rule: an idea at least this similar to a new request (as
    # the similar service answers it, asked through the peer client) is its duplicate.
    duplicate_similarity: float = DUPLICATE_SIMILARITY

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        return dict(
            super().read(e, require_secrets),
            duplicate_similarity=_fraction(e, "DUPLICATE_SIMILARITY", DUPLICATE_SIMILARITY),
        )


# The app's settings key, typed as this service's: the ideas app is given IdeasSettings.
SETTINGS = cast("web.AppKey[IdeasSettings]", common_web.SETTINGS)
