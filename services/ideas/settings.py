"""The ideas service's settings: the common core (libs/common/settings.py) and similar ideas'."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import (
    Settings,
    SettingsError,
    env_bool,
    env_choice,
    env_float,
    env_int,
)

from .embedding import MODELS


def _fraction(env: dict[str, str], name: str, default: float) -> float:
    value = env_float(env, name, default)
    if value > 1:
        raise SettingsError(f"{name} must be a number from 0 to 1, got {value!r}")
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


# The automation API's meaning rule's threshold, a similarity as `POST /ideas/similar` answers
# it (the transformer's), chosen on the labeled set's tuning part (docs/similar.md).
DUPLICATE_SIMILARITY = 0.48


@dataclass(frozen=True)
class IdeasSettings(Settings):
    # Similar ideas (docs/similar.md): the embedding model (`static`, the default: a table
    # distilled from all-MiniLM-L6-v2, microseconds a text; `minilm`: the transformer, ranks
    # better, milliseconds a text); the automation API's meaning rule's threshold; the
    # worker processes that embed search texts (`minilm`); how many steps (0 to 19) below the
    # ideas process's CPU priority they and the embedder process run.
    similar_model: str = "static"
    duplicate_similarity: float = DUPLICATE_SIMILARITY
    similar_embed_workers: int = 1
    similar_embed_nice: int = 10
    # The search texts' workers in Linux's idle scheduling class besides: a similar query's
    # model takes only the CPU the other requests leave (docs/similar.md).
    similar_search_idle: bool = True
    # The one CPU the embedder process runs on (None: any): on a small machine, the requests
    # then find the other CPUs free of its background work.
    similar_embed_cpu: int | None = None
    # The in-memory indexes an ideas process keeps, in MB: beyond, the least recently
    # searched workspaces' are dropped (and loaded again when searched).
    similar_index_memory_mb: int = 1024
    # Who runs the embedder: `child`, each ideas process one of its own; `external`, none
    # (it runs as a process of its own, `ims-ideas-embedder`, listening on `embedder_port`).
    similar_embedder: str = "child"
    embedder_port: int = 8086

    @classmethod
    def read(cls, e: dict[str, str], require_secrets: bool) -> dict[str, Any]:
        model = env_choice(e, "SIMILAR_MODEL", MODELS)
        return dict(
            super().read(e, require_secrets),
            similar_model=model,
            duplicate_similarity=_fraction(e, "DUPLICATE_SIMILARITY", DUPLICATE_SIMILARITY),
            similar_embed_workers=env_int(e, "SIMILAR_EMBED_WORKERS", 1, 1),
            similar_embed_nice=_nice(e, "SIMILAR_EMBED_NICE", 10),
            similar_search_idle=env_bool(e, "SIMILAR_SEARCH_IDLE", True),
            similar_embed_cpu=_cpu(e, "SIMILAR_EMBED_CPU"),
            similar_index_memory_mb=env_int(e, "SIMILAR_INDEX_MEMORY_MB", 1024, 1),
            similar_embedder=env_choice(e, "SIMILAR_EMBEDDER", ("child", "external")),
            embedder_port=env_int(e, "EMBEDDER_PORT", 8086, 1),
        )


# The app's settings key, typed as this service's: the ideas app is given IdeasSettings.
SETTINGS = cast("web.AppKey[IdeasSettings]", common_web.SETTINGS)
