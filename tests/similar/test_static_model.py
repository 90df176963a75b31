"""The static model (`SIMILAR_MODEL=static`, docs/similar.md, "The model"): its table is made
once and saved whole, made in memory where it cannot be saved, and a text's vector is the
normalised mean of its tokens' rows, the same alone or among others. On a system of its own:
its quality on the labeled set through the gateway (each search's candidates scored by the
transformer), its one number, and where its parts run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.similar import embedding
from services.similar.embedding import DIM, StaticEmbedder
from tests.support.api import Api
from tests.webhooks.support import PartSystem, stop_part_system, workspace_api

from .test_quality import labeled_set_holds, signal_records_the_search_similarity
from .test_similar import model_processes, similar_part_system, similar_to, until

# The static model's threshold, chosen on the tuning part (docs/similar.md): with
# SIMILAR_MODEL=static, DUPLICATE_SIMILARITY is set to it.
STATIC_THRESHOLD = 0.48


@pytest.fixture(scope="module")
async def static() -> AsyncIterator[PartSystem]:
    sys_ = await similar_part_system(
        {"SIMILAR_MODEL": "static", "DUPLICATE_SIMILARITY": str(STATIC_THRESHOLD)}
    )
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture
def static_api(static: PartSystem, http: Any, openapi: Any) -> Api:
    return workspace_api(static, http, openapi)[1]  # type: ignore[no-any-return]


async def test_labeled_set_held_out_part(static_api: Api) -> None:
    await labeled_set_holds(static_api, "static", STATIC_THRESHOLD)


async def test_a_signal_records_the_similarity_the_search_answers(static_api: Api) -> None:
    await signal_records_the_search_similarity(static_api, STATIC_THRESHOLD)


async def test_search_texts_are_embedded_in_process_and_scored_by_the_transformer(
    static_api: Api, static: PartSystem
) -> None:
    """With the static model the search process embeds search texts itself, and its
    transformer's worker, in the idle scheduling class SIMILAR_EMBED_NICE (default 10) below
    it, scores each search's candidates; the ideas process runs no model."""
    import os

    assert await similar_to(static_api, "Warm the model") is not None
    searcher = static.procs["similar"][0].pid

    async def worker() -> bool:
        return "search" in model_processes(searcher)

    await until(worker, within=30)
    assert set(model_processes(searcher)) == {"search"}
    pid = model_processes(searcher)["search"]
    assert os.sched_getscheduler(pid) == os.SCHED_IDLE
    base = os.getpriority(os.PRIO_PROCESS, searcher)
    assert os.getpriority(os.PRIO_PROCESS, pid) - base == min(base + 10, 19) - base
    assert model_processes(static.procs["ideas"][0].pid) == {}


def test_the_table_is_made_once_and_saved_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    table = np.arange(8 * DIM, dtype=np.float32).reshape(8, DIM)

    def distill(model: object) -> np.ndarray:  # the transformer's 25 s stand in for a table
        made.append(1)
        return table

    monkeypatch.setattr(embedding, "distill", distill)
    path = tmp_path / "share" / "ims" / "table.npy"
    assert np.array_equal(embedding.static_table(path), table)
    assert np.array_equal(embedding.static_table(path), table)  # read, not made again
    assert made == [1]
    assert [p.name for p in path.parent.iterdir()] == ["table.npy"]  # no partial file left
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert np.array_equal(embedding.static_table(blocked / "table.npy"), table)  # in memory
    assert made == [1, 1] and not (blocked / "table.npy").exists()


def test_a_text_is_the_normalised_mean_of_its_tokens() -> None:
    model = StaticEmbedder()
    texts = ["Dark mode for the dashboard", "Export reports as PDF", "", "!!!"]
    together = model.embed(texts)
    alone = np.vstack([model.embed([t]) for t in texts])
    assert together.shape == (4, DIM) and np.allclose(together, alone)
    assert np.allclose(np.linalg.norm(together[:2], axis=1), 1.0, atol=1e-5)
    assert model._tokenizer is not None and model._table is not None
    ids = model._tokenizer.encode(texts[0], add_special_tokens=False).ids
    mean = np.asarray(model._table)[ids].mean(axis=0)
    assert np.allclose(together[0], mean / np.linalg.norm(mean), atol=1e-6)
    assert not together[2].any()  # no token: the zero vector, similar to nothing
    night = model.embed(["A night theme, the white screens hurt my eyes"])[0]
    assert float(night @ together[0]) > float(night @ together[1])


def test_a_file_that_is_not_a_table_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = np.ones((3, DIM), np.float32)
    monkeypatch.setattr(embedding, "distill", lambda model: table)
    path = tmp_path / "table.npy"
    path.write_bytes(b"half a table")
    assert np.array_equal(embedding.static_table(path), table)
    assert np.array_equal(np.load(path), table)
