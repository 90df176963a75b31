"""The ideas service's settings: the common core (libs/common/settings.py) and similar ideas'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Settings, SettingsError, env_float, env_int


def _fraction(env: dict[str, str], name: str, default: float) -> float:
    value = env_float(env, name, default)
    if value > 1:
        raise SettingsError(f"{name} must be a number from 0 to 1, got {value!r}")
    return value


@dataclass(frozen=True)
class IdeasSettings(Settings):
    # Similar ideas (docs/similar.md): the automation API's meaning rule's threshold, and the
    # threads that embed texts off the event loop.
    duplicate_similarity: float = 0.5
    similar_embed_threads: int = 1

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        return dict(
            super().read(e, require_secrets),
            duplicate_similarity=_fraction(e, "DUPLICATE_SIMILARITY", 0.5),
            similar_embed_threads=env_int(e, "SIMILAR_EMBED_THREADS", 1, 1),
        )


# The app's settings key, typed as this service's: the ideas app is given IdeasSettings.
SETTINGS = cast("web.AppKey[IdeasSettings]", common_web.SETTINGS)
