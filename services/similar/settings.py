"""The similar service's settings: the common core (libs/common/settings.py) and its own, read
by both of its processes (`ims-similar`, `ims-similar-embedder`) and by `ideasctl similar`."""

from __future__ import annotations

import os
from typing import Annotated, Any, cast

from aiohttp import web
from pydantic import BeforeValidator, Field

from libs.common import web as common_web
from libs.common.settings import Count, Flag, Port, Settings, var

from .embedding import DEFAULT_MODEL, MODELS


def _model(value: Any) -> Any:
    if value not in MODELS:
        raise ValueError(f"must be {' or '.join(MODELS)}, got {value!r}")
    return value


def _cpu(value: Any) -> Any:
    """`last` (the default): the last CPU this process may run on, when it may run on two or
    more; `none`: any CPU; a number: that CPU."""
    if not isinstance(value, str):
        return value
    value = value.strip().lower()
    # Where a process cannot be kept to CPUs (macOS has no sched_setaffinity), `last` is none.
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    if value == "none":
        return None
    if value == "last":
        return max(allowed) if len(allowed) > 1 else None
    if not value.isdigit() or int(value) not in allowed:
        raise ValueError(
            "must be last, none or one of the CPUs this process may use"
            f" ({', '.join(map(str, sorted(allowed)))}), got {value!r}"
        )
    return int(value)


Model = Annotated[str, BeforeValidator(_model)]
Nice = Annotated[int, Field(ge=0, le=19)]
Cpu = Annotated[int | None, BeforeValidator(_cpu)]


class SimilarSettings(Settings):
    similar_model: Model = var(
        DEFAULT_MODEL,
        "the embedding model of similar ideas: `mpnet` (all-mpnet-base-v2, int8, for stored "
        "ideas and search texts alike, about 17 ms of CPU a text in the similar service's own "
        "processes), `minilm` (all-MiniLM-L6-v2, int8, about 7 ms, ranks less well) or `static` "
        "(all-MiniLM-L6-v2 distilled to a table of token vectors, whose 50 nearest "
        "all-MiniLM-L6-v2 scores); after a change, the embedder embeds the ideas again at its "
        "start, or `ideasctl similar rebuild` at once; each model has its own "
        "`DUPLICATE_SIMILARITY` "
        "([docs/similar.md](docs/similar.md#the-model))",
        kind=" or ".join(f"`{m}`" for m in MODELS),
    )
    similar_embed_workers: Count = var(
        1,
        "worker processes per search process that run the transformer on search texts "
        "([docs/similar.md](docs/similar.md))",
    )
    similar_embed_nice: Nice = var(
        10,
        "how many steps (0 to 19) below their parent's CPU priority the model processes run, "
        "so requests take the CPU first",
    )
    similar_search_idle: Flag = var(
        True,
        "`1`: the search process (`ims-similar`) runs in Linux's idle scheduling class (the "
        "CPU only when no other process wants it, given up the moment one does), so similar "
        "queries never take the CPU from other requests; its workers too; `0`: at the normal "
        "class (the workers at `SIMILAR_EMBED_NICE`) ([docs/similar.md](docs/similar.md))",
    )
    similar_embed_cpu: Cpu = var(
        "last",
        "the one CPU the embedder process (new and edited ideas' embeddings) runs on: `last` "
        "(the last CPU the process may use, when it may use two or more), `none` (any CPU; "
        "the Kubernetes manifests' choice), or a CPU's number ([docs/similar.md](docs/similar.md))",
        shown="`last`",
        kind="`last`, `none` or a CPU's number",
        validate_default=True,
    )
    similar_index_memory_mb: Count = var(
        1024,
        "in-memory similar-ideas indexes a search process keeps, in MB; beyond, the least "
        "recently searched workspaces' are dropped and loaded again when searched",
    )
    embedder_port: Port = var(
        8086,
        "where `ims-similar-embedder` answers `/healthz`, `/readyz` and `/metrics`",
    )


# The app's settings key, typed as this service's: the similar app is given SimilarSettings.
SETTINGS = cast("web.AppKey[SimilarSettings]", common_web.SETTINGS)
