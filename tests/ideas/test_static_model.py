"""The static model (docs/similar.md, "The model"): its table is made once and saved whole, made
in memory where it cannot be saved, and a text's vector is the normalised mean of its tokens'
rows, the same alone or among others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.ideas import embedding
from services.ideas.embedding import DIM, StaticEmbedder


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
