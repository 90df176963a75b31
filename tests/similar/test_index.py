"""The in-memory index's search (docs/similar.md, "The index"): exact up to RESCORE rows; above,
the sign bits' Hamming distance picks the candidates scored exactly, in one pass over all 384
bits or, past COARSE_FROM rows, a first pass on 192 of them and the rest for the rows it keeps.
Measured against an exact search on clustered vectors, with rows left out (deleted or merged)
never answered."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from services.similar.embedding import DIM, quantize
from services.similar.index import COARSE_FROM, RESCORE, Index, nearest_rows


def clustered(n: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((max(n // 100, 1), DIM)).astype(np.float32)
    v = centers[rng.integers(0, len(centers), n)]
    v += noise * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def index_of(v: np.ndarray, seed: int) -> Index:
    index = Index()
    ids = np.random.default_rng(seed).integers(0, 2**63, (len(v), 2), dtype=np.uint64)
    index.bulk(ids, quantize(v))
    return index


def row_id(index: Index, row: int) -> uuid.UUID:
    return uuid.UUID(bytes=index.ids[row].tobytes())


def exact_top(index: Index, q: np.ndarray, k: int) -> list[uuid.UUID]:
    n = index.n
    scores = (index.vecs[:n].astype(np.float32) @ q) / 127.0
    scores[~index.live[:n]] = -2.0
    return [row_id(index, r) for r in np.argsort(-scores, kind="stable")[:k]]


def test_a_small_workspace_is_searched_exactly() -> None:
    v = clustered(RESCORE, 1.0, seed=1)
    index = index_of(v, seed=1)
    for t in range(0, RESCORE, 97):
        got = index.search(v[t], 10)
        assert [i for i, _ in got] == exact_top(index, v[t], 10)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


@pytest.mark.parametrize("rows", [20_000, COARSE_FROM + 34_464], ids=["one pass", "two passes"])
def test_a_large_workspace_finds_what_an_exact_search_finds(rows: int) -> None:
    # Loose clusters: the 10th neighbour at a cosine of about 0.54, near the duplicate rule's.
    v = clustered(rows, 1.0, seed=rows)
    index = index_of(v, seed=rows)
    hits = 0
    for t in range(40):
        q = v[t * 1_009 % rows]
        hits += len({i for i, _ in index.search(q, 10)} & set(exact_top(index, q, 10)))
    assert hits / 400 >= 0.98, f"recall@10 {hits / 400}"


def test_rows_left_out_are_never_answered() -> None:
    rows = COARSE_FROM + 10_000
    v = clustered(rows, 0.6, seed=7)
    index = index_of(v, seed=7)
    q = v[123]
    before = [i for i, _ in index.search(q, 20)]
    for idea in before[:10]:  # the ten nearest leave (deleted, merged)
        index.put(idea, np.zeros(DIM, np.int8), live=False)
    after = [i for i, _ in index.search(q, 20)]
    assert not set(after) & set(before[:10])
    assert after == exact_top(index, q, 20)[: len(after)]
    assert after[:10] == before[10:]


def test_the_first_pass_keeps_at_least_the_nearest_rows() -> None:
    """`nearest_rows` with a sampled histogram keeps every row the exact one keeps, and not
    many more; when the sample misleads it (every 16th row near, the others far) it falls back
    to the exact histogram."""
    rng = np.random.default_rng(3)
    plain = rng.integers(40, 150, 200_000).astype(np.uint8)
    exact, sampled = nearest_rows(plain, 16_384), nearest_rows(plain, 16_384, sample=True)
    assert len(exact) >= 16_384 and set(exact) <= set(sampled)
    assert len(sampled) <= 1.5 * len(exact)

    misleading = np.full(200_000, 150, np.uint8)
    misleading[::16] = 10  # the sample sees only near rows: 12,500 of them, fewer than kept
    exact, sampled = nearest_rows(misleading, 16_384), nearest_rows(misleading, 16_384, True)
    assert len(exact) == len(sampled) == 200_000
