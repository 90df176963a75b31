"""The similar service's settings: the common core (libs/common/settings.py) and its own, read
by both of its processes (`ims-similar`, `ims-similar-embedder`) and by `ideasctl similar`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Settings, SettingsError, env_bool, env_int

from .embedding import DEFAULT_MODEL, MODELS


def _model(env: dict[str, str], name: str) -> str:
    """One of `MODELS`; `DEFAULT_MODEL` when unset."""
    value = env.get(name, "").strip() or DEFAULT_MODEL
    if value not in MODELS:
        raise SettingsError(f"{name} must be {' or '.join(MODELS)}, got {value!r}")
    return value


def _nice(env: dict[str, str], name: str, default: int) -> int:
    value = env_int(env, name, default)
    if value > 19:
        raise SettingsError(f"{name} must be an integer from 0 to 19, got {value}")
    return value


def _cpu(env: dict[str, str], name: str) -> int | None:
    """`last` (the default): the last CPU this process may run on, when it may run on two or
    more; `none`: any CPU; a number: that CPU."""
    value = env.get(name, "last").strip().lower()
    # Where a process cannot be kept to CPUs (macOS has no sched_setaffinity), `last` is none.
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    if value == "none":
        return None
    if value == "last":
        return max(allowed) if len(allowed) > 1 else None
    if not value.isdigit() or int(value) not in allowed:
        raise SettingsError(
            f"{name} must be last, none or one of the CPUs this process may use"
            f" ({', '.join(map(str, sorted(allowed)))}), got {value!r}"
        )
    return int(value)


@dataclass(frozen=True)
class SimilarSettings(Settings):
    # The embedding model (docs/similar.md): `minilm`, the default, the transformer for stored
    # ideas and search texts alike; `static`, a table distilled from it that finds each
    # search's candidates for the transformer to score.
    similar_model: str = DEFAULT_MODEL
    # The search process's worker processes that run the transformer on search texts, and how
    # many steps (0 to 19) below their parent's CPU priority they and the embedder run.
    similar_embed_workers: int = 1
    similar_embed_nice: int = 10
    # The search process (and so its workers) in Linux's idle scheduling class: a similar
    # query takes only the CPU the other requests leave (docs/similar.md).
    similar_search_idle: bool = True
    # The one CPU the embedder runs on (None: any): on a small machine, the requests then find
    # the other CPUs free of its background work.
    similar_embed_cpu: int | None = None
    # The in-memory indexes a search process keeps, in MB: beyond, the least recently
    # searched workspaces' are dropped (and loaded again when searched).
    similar_index_memory_mb: int = 1024
    # Where the embedder answers its probes and metrics.
    embedder_port: int = 8086

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        return dict(
            super().read(e, require_secrets),
            similar_model=_model(e, "SIMILAR_MODEL"),
            similar_embed_workers=env_int(e, "SIMILAR_EMBED_WORKERS", 1, 1),
            similar_embed_nice=_nice(e, "SIMILAR_EMBED_NICE", 10),
            similar_search_idle=env_bool(e, "SIMILAR_SEARCH_IDLE", True),
            similar_embed_cpu=_cpu(e, "SIMILAR_EMBED_CPU"),
            similar_index_memory_mb=env_int(e, "SIMILAR_INDEX_MEMORY_MB", 1024, 1),
            embedder_port=env_int(e, "EMBEDDER_PORT", 8086, 1),
        )


# The app's settings key, typed as this service's: the similar app is given SimilarSettings.
SETTINGS = cast("web.AppKey[SimilarSettings]", common_web.SETTINGS)
