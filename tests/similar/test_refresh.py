"""How a search process keeps its in-memory indexes current (docs/similar.md, "In memory"): it
reads the rows of `similar.embeddings` past the last seq it applied, and a look-back window
behind it for rows whose transactions committed out of seq order; a row version read once is
not read again, so a refresh with nothing new reads no row. Against the real database."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import aiopg
import numpy as np
import psycopg2

from services.similar.embedding import DIM, quantize
from services.similar.index import LOOKBACK, REFRESH_ROWS, Similar, text_hash


def write(conn: Any, workspace: uuid.UUID, idea: uuid.UUID, v: np.ndarray) -> None:
    with conn.cursor() as cur:
        cur.execute(
            'INSERT INTO "similar".embeddings (workspace_id, idea_id, vector, text_hash, live)'
            " VALUES (%s, %s, %s, %s, true)",
            (str(workspace), str(idea), quantize(v).tobytes(), text_hash("test", str(idea))),
        )


async def test_rows_are_read_once_and_late_commits_are_not_missed(system: Any) -> None:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((5, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    workspace, ideas = uuid.uuid4(), [uuid.uuid4() for _ in vectors]
    first, late = psycopg2.connect(system.database_url), psycopg2.connect(system.database_url)
    similar = Similar(system.database_url)
    pool = await aiopg.create_pool(system.database_url, minsize=1, maxsize=1)
    try:
        with first:
            for idea, v in zip(ideas[:3], vectors[:3], strict=True):
                write(first, workspace, idea, v)
        index = await similar.index(workspace)
        assert index.n == 3
        async with pool.acquire() as conn, conn.cursor() as cur:
            await similar.refresh(cur)  # the look-back window: the rows of the load
            assert await similar.refresh(cur) == 0, "a refresh with nothing new read rows"

            write(late, workspace, ideas[3], vectors[3])  # takes a seq, commits later
            with first:
                write(first, workspace, ideas[4], vectors[4])  # a later seq, committed first
            assert await similar.refresh(cur) == 1
            assert index.vector(ideas[4]) is not None and index.vector(ideas[3]) is None
            late.commit()
            assert await similar.refresh(cur) == 1, "a row committed out of seq order was missed"
            assert await similar.refresh(cur) == 0
        for idea, v in zip(ideas, vectors, strict=True):
            assert index.search(v, 1)[0][0] == idea
    finally:
        similar.close()
        pool.close()
        await pool.wait_closed()
        for conn in (first, late):
            with conn, conn.cursor() as cur:
                cur.execute(
                    'DELETE FROM "similar".embeddings WHERE workspace_id = %s', (str(workspace),)
                )
            conn.close()


async def test_a_workspace_loaded_after_a_bulk_write_is_not_read_again(system: Any) -> None:
    """Rows written in bulk while the process has no index loaded (a rebuild, a restore) come
    from the workspace's load, and the refreshes after it read at most its look-back window:
    not every row since the process started, on its event loop (the refresher's watermark
    moves on while no workspace is loaded)."""
    rows = LOOKBACK * 3
    rng = np.random.default_rng(12)
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    workspace = uuid.uuid4()
    similar = Similar(system.database_url)
    pool = await aiopg.create_pool(system.database_url, minsize=1, maxsize=1)
    conn = psycopg2.connect(system.database_url)
    other = uuid.uuid4()  # a row before the process starts: its watermark is not 0
    with conn:
        write(conn, other, uuid.uuid4(), vectors[0])
    refresher = asyncio.create_task(similar.run_refresher(pool))
    try:
        await asyncio.sleep(1.5)  # listening, its watermark set
        with conn, conn.cursor() as c:
            c.executemany(
                'INSERT INTO "similar".embeddings (workspace_id, idea_id, vector, text_hash,'
                " live) VALUES (%s, %s, %s, %s, true)",
                [
                    (str(workspace), str(uuid.uuid4()), v.tobytes(), text_hash("t", str(i)))
                    for i, v in enumerate(quantize(vectors))
                ],
            )
        await asyncio.sleep(2.5)  # refreshes with no index loaded
        before = REFRESH_ROWS._value.get()
        index = await similar.index(workspace)
        assert index.n == rows
        await asyncio.sleep(2.5)  # the refreshes after the load
        read = REFRESH_ROWS._value.get() - before
        assert read <= LOOKBACK, f"the refreshes after the load read {read} rows again"
    finally:
        refresher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await refresher
        similar.close()
        with conn, conn.cursor() as c:
            c.execute(
                'DELETE FROM "similar".embeddings WHERE workspace_id = ANY(%s::uuid[])',
                ([str(workspace), str(other)],),
            )
        conn.close()
        pool.close()
        await pool.wait_closed()
