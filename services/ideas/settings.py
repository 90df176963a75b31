"""The ideas service's settings: the common core (libs/common/settings.py) and similar ideas'."""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal, cast

from aiohttp import web
from pydantic import BeforeValidator, Field

from libs.common import web as common_web
from libs.common.settings import Count, Flag, Fraction, Port, Settings, var

from .embedding import MODELS


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


# The automation API's meaning rule's threshold, a similarity as `POST /ideas/similar` answers
# it (the transformer's), chosen on the labeled set's tuning part (docs/similar.md).
DUPLICATE_SIMILARITY = 0.48

Model = Annotated[str, BeforeValidator(_model)]
Nice = Annotated[int, Field(ge=0, le=19)]
Cpu = Annotated[int | None, BeforeValidator(_cpu)]


class IdeasSettings(Settings):
    # Similar ideas (docs/similar.md).
    similar_model: Model = var(
        MODELS[0],
        "the embedding model of similar ideas: `static` (all-MiniLM-L6-v2 distilled to a table "
        "of token vectors: microseconds a text, so new ideas cost no model; a search's 50 "
        "nearest by it are scored by the transformer) or `minilm` (the transformer for every "
        "vector: ranks a point better, 10 to 40 ms of CPU a text in processes of its own, new "
        "ideas included); after a change, the embedder embeds the ideas again at its start, or "
        "`ideasctl similar rebuild` at once ([docs/similar.md](docs/similar.md#the-model))",
        kind=" or ".join(f"`{m}`" for m in MODELS),
    )
    duplicate_similarity: Fraction = var(
        DUPLICATE_SIMILARITY,
        "the automation API's duplicate rule by meaning: the similarity (0 to 1) "
        "`POST /ideas/similar` answers for the most similar idea, at or above which a new idea "
        "is a duplicate (the Signal records it); chosen on the labeled set's tuning part "
        "([docs/similar.md](docs/similar.md#duplicate_similarity-the-automation-apis-meaning-rule))",
    )
    similar_embed_workers: Count = var(
        1,
        "worker processes per ideas or search process that run the transformer: for search "
        "texts and, with `static`, the candidates they score, and for the automation rule's "
        "duplicate checks (new and edited ideas: the embedder process) "
        "([docs/similar.md](docs/similar.md#where-it-runs-and-why-in-the-ideas-service))",
    )
    similar_embed_nice: Nice = var(
        10,
        "how many steps (0 to 19) below the ideas process's CPU priority its model processes "
        "run, so requests take the CPU first",
    )
    similar_search_idle: Flag = var(
        True,
        "`1`: the search process (`ims-ideas-similar`) runs in Linux's idle scheduling class "
        "(the CPU only when no other process wants it, given up the moment one does), so "
        "similar queries never take the CPU from other requests; its search texts' worker "
        "processes too; `0`: at the normal class (the workers at `SIMILAR_EMBED_NICE`) "
        "([docs/similar.md](docs/similar.md#where-it-runs-and-why-in-the-ideas-service))",
    )
    similar_embed_cpu: Cpu = var(
        "last",
        "the one CPU the embedder process (new and edited ideas' embeddings) runs on: `last` "
        "(the last CPU the ideas process may use, when it may use two or more), `none` (any "
        "CPU; the Kubernetes manifests' choice), or a CPU's number "
        "([docs/similar.md](docs/similar.md#where-it-runs-and-why-in-the-ideas-service))",
        shown="`last`",
        kind="`last`, `none` or a CPU's number",
        validate_default=True,
    )
    similar_index_memory_mb: Count = var(
        1024,
        "in-memory similar-ideas indexes a search process (or an ideas process, for the "
        "automation rule) keeps, in MB; beyond, the least recently searched workspaces' are "
        "dropped and loaded again when searched (about 465 bytes an idea)",
    )
    similar_embedder: Literal["child", "external"] = var(
        "child",
        "who runs the embedder (new and edited ideas' embeddings): `child`, each ideas process "
        "starts and watches one; `external`, none, because it runs as a process of its own "
        "(`ims-ideas-embedder`; the Kubernetes manifests' choice) "
        "([docs/similar.md](docs/similar.md#where-it-runs-and-why-in-the-ideas-service))",
    )
    embedder_port: Port = var(
        8086,
        "where `ims-ideas-embedder` (run on its own) answers `/healthz`, `/readyz` and `/metrics`",
    )


# The app's settings key, typed as this service's: the ideas app is given IdeasSettings.
SETTINGS = cast("web.AppKey[IdeasSettings]", common_web.SETTINGS)
