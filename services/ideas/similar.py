"""Similar ideas by meaning (docs/similar.md): the in-memory index of each workspace, its
upkeep from `ideas.embeddings`, the embedder's writes of that table, and the searches.

- Search texts are embedded by the static model in the process (tens of microseconds), or,
  with the transformer (`SIMILAR_MODEL=minilm`), in worker processes at a lower CPU priority
  (`embedding.EmbedPool`, at most `EMBED_QUEUE` texts waiting): never on the event loop,
  never under its GIL; new and edited ideas by the embedder process (embedder.py). With the
  static model, the transformer (in those workers) scores each search's RERANK nearest ideas
  by the static model, and its cosine is the answer's similarity (`_rerank`); the automation
  rule's duplicate is that search's first answer (`duplicate`): one number for both.
- Each process keeps, per workspace it has searched, an index: ids, int8 vectors, their sign
  bits, and which are live. A search with up to `RESCORE` live vectors is exact; above that,
  the Hamming distance of the sign bits picks `RESCORE` candidates, scored exactly.
- The embedder process (embedder.py) consumes the `similar` queue (idea.created/updated/
  status_changed/deleted), writes ideas' rows in `ideas.embeddings` (`upsert_embeddings`) and
  notifies `ideas_similar`; every process then applies the rows past the last `seq` it saw
  (a look-back covers rows committed out of seq order).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import aiopg
import numpy as np
import psycopg2
import structlog
from aiohttp import web
from prometheus_client import Counter

from libs.common import db
from libs.common.errors import NotFound, ServiceUnavailable
from libs.common.tasks import raise_if_cancelled

from . import prepared
from .embedding import (
    DIM,
    Embedder,
    EmbedPool,
    StaticEmbedder,
    idea_text,
    make_embedder,
    quantize,
)
from .render import IDEA_JSON, fragment

log = structlog.get_logger("similar")

SEARCH_TEXTS = Counter(
    "ims_similar_search_texts_total",
    "Search texts embedded, by where the vector came from (the model, or the recent texts)",
    ["source"],
)

RESCORE = 1024  # candidates scored exactly (and the size up to which a search is exact)
EMBED_QUEUE = 64  # search texts waiting for the search worker before a 503
LOOKBACK = 1024  # seqs re-read behind the watermark (rows committed out of order)
WORDS = DIM // 64  # uint64 words of sign bits a vector
COARSE_WORDS = 3  # words of the first pass over a large workspace (192 of the 384 bits)
COARSE_KEEP = 16 * RESCORE  # rows the first pass keeps for the full distance
COARSE_FROM = 4 * COARSE_KEEP  # rows from which a search makes the first pass
INLINE_UP_TO = RESCORE  # rows searched on the event loop (exact: a quarter of a millisecond)
RECENT_TEXTS = 1024  # search texts (per workspace) whose vectors a process keeps
RERANK = 50  # with the static model: its nearest ideas the transformer scores (a search's answer)
VERIFIED_TEXTS = 32768  # texts (per workspace) whose vectors by the transformer a process keeps
ELIGIBLE = "i.status <> 'deleted' AND i.merged_into_id IS NULL"
# The static model's candidates (ids, best first): the first eligible ones' texts (up to the
# last parameter), each with its place among them, for the transformer to score.
TEXTS_SQL = (
    "SELECT h.n, i.title, i.summary FROM unnest(%s::uuid[]) WITH ORDINALITY h(id, n)"
    " JOIN ideas.ideas i ON i.id = h.id AND i.workspace_id = %s"
    f" WHERE {ELIGIBLE} ORDER BY h.n LIMIT %s"
)
# A search's hits (ids, best first), the first `limit` eligible ones rendered, in that order,
# each with its place among the hits. The ids go as one array literal of their hex digits:
# adapting a text costs psycopg2 less than a list of UUIDs, and no UUID object is made for
# ids that come back only as their places.
HITS_SQL = (
    f"SELECT h.n, {IDEA_JSON}::text FROM unnest(%s::uuid[]) WITH ORDINALITY h(id, n)"
    f" JOIN ideas.ideas i ON i.id = h.id AND i.workspace_id = %s"
    f" WHERE {ELIGIBLE} ORDER BY h.n LIMIT %s"
)


def text_hash(model_id: str, text: str) -> bytes:
    """What a row's vector was computed from: the model and the text. A row of another model
    (SIMILAR_MODEL changed) is embedded again by the next event of its idea, or at once by
    `ideasctl similar rebuild`."""
    return hashlib.sha256(f"{model_id}\n{text}".encode()).digest()[:16]


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    return np.packbits(vectors > 0, axis=-1).view(np.uint64).reshape(-1, WORDS)


def id_words(ids: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(ids), dtype=np.uint64).reshape(-1, 2).copy()


def hamming(bits: np.ndarray, qbits: np.ndarray, n: int, words: int, dtype: Any) -> np.ndarray:
    """The Hamming distances of the first n rows' first `words` words of sign bits to the
    query's: one XOR and popcount pass a word (the bits are word-major)."""
    dist = np.bitwise_count(bits[0, :n] ^ qbits[0]).astype(dtype)
    word = np.empty(n, np.uint64)
    for w in range(1, words):
        np.bitwise_xor(bits[w, :n], qbits[w], out=word)
        dist += np.bitwise_count(word)
    return dist


def nearest_rows(dist: np.ndarray, keep: int, sample: bool = False) -> np.ndarray:
    """The rows of the `keep` smallest distances and their ties: the smallest distance whose
    count reaches `keep`, from a histogram (cheaper than a partition). With `sample`, the
    histogram of every 16th row first (a third of the time over 1,000,000 rows) gives a
    distance that keeps at least `keep` rows, a few more than the exact one would."""
    if sample:
        reach = np.cumsum(np.bincount(dist[::16])) * 16
        rows = np.flatnonzero(dist <= int(np.searchsorted(reach, keep * 1.25)))
        if len(rows) >= keep:
            return rows
    reach = np.cumsum(np.bincount(dist))
    return np.flatnonzero(dist <= int(np.searchsorted(reach, keep)))


class Index:
    """One workspace's vectors. Appends reallocate (a search in a thread keeps the arrays it
    started with); in-place updates of a row are single writes the GIL orders. A row is found
    by binary search among the rows of the initial load (sorted by id) or in a dict of the
    rows added since."""

    def __init__(self) -> None:
        self.loaded_seq = 0  # every row up to this seq was in the initial load's snapshot
        self.sorted_hi = np.zeros(0, np.uint64)
        self.sorted_at = np.zeros(0, np.int64)
        self.added: dict[tuple[int, int], int] = {}
        self.n = 0
        self.ids = np.zeros((0, 2), np.uint64)
        self.vecs = np.zeros((0, DIM), np.int8)
        self.bits = np.zeros((WORDS, 0), np.uint64)  # word-major: one XOR pass a word
        self.live = np.zeros(0, bool)

    def _grow(self, extra: int) -> None:
        need = self.n + extra
        if need <= len(self.live):
            return
        cap = max(need, 2 * len(self.live), 1024)

        def more(a: np.ndarray) -> np.ndarray:
            b = np.zeros((cap, *a.shape[1:]), a.dtype)
            b[: self.n] = a[: self.n]
            return b

        bits = np.zeros((WORDS, cap), np.uint64)
        bits[:, : self.n] = self.bits[:, : self.n]
        self.ids, self.vecs, self.live = more(self.ids), more(self.vecs), more(self.live)
        self.bits = bits

    def bulk(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        """The initial load: rows known to be distinct and live, into an empty index."""
        assert self.n == 0
        self._grow(len(ids))
        s = slice(0, len(ids))
        self.ids[s], self.vecs[s], self.live[s] = ids, vecs, True
        self.bits[:, s] = sign_bits(vecs).T
        self.n = len(ids)
        order = np.argsort(self.ids[: self.n, 0], kind="stable")
        self.sorted_hi, self.sorted_at = self.ids[order, 0].copy(), order

    def position(self, idea: np.ndarray) -> int | None:
        at = self.added.get((int(idea[0]), int(idea[1])))
        if at is not None:
            return at
        i = int(np.searchsorted(self.sorted_hi, idea[0]))
        while i < len(self.sorted_hi) and self.sorted_hi[i] == idea[0]:
            row = int(self.sorted_at[i])
            if self.ids[row, 1] == idea[1]:
                return row
            i += 1
        return None

    def put(self, idea_id: uuid.UUID, vec: np.ndarray, live: bool) -> None:
        key = id_words([idea_id.bytes])[0]
        at = self.position(key)
        if at is None:
            if not live:
                return
            self._grow(1)
            at = self.n
            self.ids[at] = key
            self.added[(int(key[0]), int(key[1]))] = at
            self.n += 1
        self.vecs[at], self.bits[:, at] = vec, sign_bits(vec[None, :])[0]
        self.live[at] = live

    def vector(self, idea_id: uuid.UUID) -> np.ndarray | None:
        at = self.position(id_words([idea_id.bytes])[0])
        return None if at is None or not self.live[at] else self.vecs[at]

    def search(self, q: np.ndarray, k: int) -> list[tuple[uuid.UUID, float]]:
        """The k best live rows for the unit vector q: (id, cosine), best first."""
        return [(uuid.UUID(bytes=raw), score) for raw, score in self.top(q, k)]

    def top(self, q: np.ndarray, k: int) -> list[tuple[bytes, float]]:
        """`search` with each id as its 16 bytes."""
        n, ids, vecs, bits, live = self.n, self.ids, self.vecs, self.bits, self.live
        if n == 0:
            return []
        if n <= RESCORE:
            cand = np.flatnonzero(live[:n])
        else:
            qbits = sign_bits(q[None, :])[0]
            # Past COARSE_FROM rows, a first pass on the first COARSE_WORDS words keeps the
            # COARSE_KEEP nearest (distances fit a byte: half the memory traffic), and the
            # other words are read for those alone.
            words = COARSE_WORDS if n > COARSE_FROM else WORDS
            dist = hamming(bits, qbits, n, words, np.uint8 if words * 64 < 255 else np.uint16)
            if not live[:n].all():
                np.putmask(dist, ~live[:n], words * 64 + 1)  # beyond any live row
            if words == WORDS:
                cand = nearest_rows(dist, RESCORE)
            else:
                cand = nearest_rows(dist, COARSE_KEEP, sample=True)
                full = dist[cand].astype(np.uint16)
                for w in range(words, WORDS):
                    full += np.bitwise_count(bits[w, cand] ^ qbits[w])
                cand = cand[nearest_rows(full, RESCORE)]
            cand = cand[live[cand]]
        scores = (vecs[cand].astype(np.float32) @ q) / 127.0
        top = np.argsort(-scores)[:k] if len(cand) <= k else np.argpartition(-scores, k)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        rows = ids[cand[top]]
        return list(zip(map(bytes, rows), scores[top].tolist(), strict=True))

    @property
    def nbytes(self) -> int:
        return sum(
            a.nbytes
            for a in (self.ids, self.vecs, self.bits, self.live, self.sorted_hi, self.sorted_at)
        )


@contextlib.asynccontextmanager
async def _cursor(source: aiopg.Cursor | aiopg.Pool) -> AsyncIterator[aiopg.Cursor]:
    """The caller's cursor as it is, or a connection of a pool for one query's time: a search
    given a pool holds none while its index loads or a model runs."""
    if isinstance(source, aiopg.Pool):
        async with db.cursor(source) as cur:
            yield cur
    else:
        yield source


@dataclass
class Similar:
    """The process's indexes and executors (one per ideas process, on the app)."""

    dsn: str
    model: str = "static"
    workers: int = 1
    nice: int = 10
    idle: bool = True  # the search texts' workers in the idle scheduling class
    memory_budget: int = 1024 * 2**20  # bytes of indexes kept (SIMILAR_INDEX_MEMORY_MB)
    indexes: dict[uuid.UUID, Index] = field(default_factory=dict)
    loading: dict[uuid.UUID, asyncio.Future[Index]] = field(default_factory=dict)
    watermark: int = 0
    fetched: set[int] = field(default_factory=set)  # seqs read in the look-back window
    recent: OrderedDict[tuple[uuid.UUID, str], np.ndarray] = field(default_factory=OrderedDict)
    # The transformer's vectors (float16) of the texts it scored lately: search texts and the
    # static model's candidates, by workspace and text.
    verified: OrderedDict[tuple[uuid.UUID, str], np.ndarray] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        # New and edited ideas are embedded by the embedder process (embedder.py), so a search
        # never waits behind them. A search text: by the static model in this process (tens
        # of microseconds), or by the transformer in worker processes (`query_pool`).
        self.static = StaticEmbedder() if self.model == "static" else None
        self.model_id = StaticEmbedder.model_id if self.static else Embedder.model_id
        self.query_pool = EmbedPool(self.workers, self.nice, self.idle)
        self.search_pool = ThreadPoolExecutor(2, thread_name_prefix="search")
        self.waiting = threading.BoundedSemaphore(EMBED_QUEUE)

    async def embed(self, workspace_id: uuid.UUID, text: str) -> np.ndarray:
        """The unit vector of a workspace's search text. A text the workspace asked for
        lately (an integration's retry, a draft searched again) comes from the process's
        last RECENT_TEXTS, not the model: the model is what the requests beside a search feel
        (docs/similar.md). Kept per workspace, so how fast a text answers says nothing of
        another workspace's searches."""
        key = (workspace_id, text)
        vector = self.recent.pop(key, None)
        if vector is not None:
            SEARCH_TEXTS.labels("recent").inc()
        else:
            vector = await self._embed(text)
            SEARCH_TEXTS.labels("model").inc()
            self.recent.pop(key, None)  # a search of the same text meanwhile put it back
        self.recent[key] = vector  # the most recently asked last
        if len(self.recent) > RECENT_TEXTS:
            self.recent.popitem(last=False)  # the least recently asked
        return vector

    async def _embed(self, text: str) -> np.ndarray:
        if self.static is not None:
            if not self.static.loaded:  # reading the table (or making it) is not the loop's
                await asyncio.get_running_loop().run_in_executor(self.search_pool, self.static.load)
            return self.static.embed([text])[0]
        return (await self._transformer([text]))[0]

    async def _transformer(self, texts: list[str]) -> np.ndarray:
        """Texts through the transformer, in the worker processes (at most EMBED_QUEUE
        requests waiting: beyond, 503)."""
        if not self.waiting.acquire(blocking=False):
            raise ServiceUnavailable("Too many texts waiting to be embedded; try again")
        try:
            return await self.query_pool.embed(texts)
        finally:
            self.waiting.release()

    async def duplicate(
        self, pool: aiopg.Pool, workspace_id: uuid.UUID, text: str, threshold: float
    ) -> tuple[uuid.UUID, float] | None:
        """The automation rule's duplicate by meaning: the idea `POST /ideas/similar` puts
        first for `text`, when its similarity reaches `threshold` (docs/similar.md): the same
        search, so the Signal records the number that search answers. A connection of `pool`
        is held only for each query, never while the index loads or a model runs (the
        automation create calls it with no transaction open)."""
        vector = await self.embed(workspace_id, text)
        found = await self.nearest(pool, workspace_id, vector, 1, threshold, text=text)
        return (found[0][0], found[0][1]) if found else None

    async def scored(self, workspace_id: uuid.UUID, texts: list[str]) -> np.ndarray:
        """The transformer's unit vectors of texts: those it scored lately from the process's
        last VERIFIED_TEXTS (kept per workspace, as float16), the others in one call."""
        out = np.empty((len(texts), DIM), np.float32)
        missing = []
        for row, text in enumerate(texts):
            vector = self.verified.pop((workspace_id, text), None)
            if vector is None:
                missing.append(row)
            else:
                out[row] = vector
                self.verified[(workspace_id, text)] = vector  # the most recently used last
        if missing:
            fresh = (await self._transformer([texts[row] for row in missing])).astype(np.float16)
            for row, vector in zip(missing, fresh, strict=True):
                out[row] = vector
                # a copy: a row of `fresh` would keep the whole call's array alive
                self.verified[(workspace_id, texts[row])] = vector.copy()
            while len(self.verified) > VERIFIED_TEXTS:
                self.verified.popitem(last=False)
        return out

    async def _rerank(
        self,
        source: aiopg.Cursor | aiopg.Pool,
        workspace_id: uuid.UUID,
        text: str,
        hits: list[tuple[bytes, float]],
        keep: int,
    ) -> list[tuple[bytes, float]]:
        """The static model's first `keep` eligible hits scored by the transformer against
        `text`, best first: the static model finds the candidates (microseconds over the
        whole workspace), the transformer ranks them and its cosine is their similarity."""
        ids = "{" + ",".join(raw.hex() for raw, _ in hits) + "}"
        async with _cursor(source) as cur:
            await prepared.execute(cur, TEXTS_SQL, (ids, workspace_id, keep))
            rows = await cur.fetchall()
        if not rows:
            return []
        vectors = await self.scored(
            workspace_id, [text, *(idea_text(title, summary) for _, title, summary in rows)]
        )
        scores = vectors[1:] @ vectors[0]
        order = np.argsort(-scores, kind="stable")
        return [(hits[rows[j][0] - 1][0], max(0.0, min(1.0, float(scores[j])))) for j in order]

    async def warm(self) -> None:
        """Load the models (the transformer: start a worker) ahead of the first text."""
        if self.static is not None:
            await asyncio.get_running_loop().run_in_executor(self.search_pool, self.static.load)
        await self.query_pool.warm()

    def close(self) -> None:
        self.query_pool.close()
        self.search_pool.shutdown(wait=False, cancel_futures=True)

    # ---- the index of a workspace ----------------------------------------------------------

    async def index(self, workspace_id: uuid.UUID) -> Index:
        found = self.indexes.pop(workspace_id, None)
        if found is not None:
            self.indexes[workspace_id] = found  # the most recently searched last
            return found
        pending = self.loading.get(workspace_id)
        if pending is None:
            pending = asyncio.ensure_future(self._load(workspace_id))
            self.loading[workspace_id] = pending
        try:
            return await asyncio.shield(pending)
        finally:
            if pending.done():
                self.loading.pop(workspace_id, None)

    async def _load(self, workspace_id: uuid.UUID) -> Index:
        loop = asyncio.get_running_loop()
        index, seq = await loop.run_in_executor(
            self.search_pool, load_index, self.dsn, workspace_id
        )
        self.indexes[workspace_id] = index
        self._evict()
        # Rows written while it loaded (past its snapshot): the next refresh reads from there
        # (rows already read are not read again: `fetched`).
        self.watermark = min(self.watermark, seq) if self.watermark else seq
        log.info(
            "similar_index_loaded",
            workspace_id=str(workspace_id),
            vectors=index.n,
            bytes=index.nbytes,
        )
        return index

    def _evict(self) -> None:
        """Drop the least recently searched indexes while they hold more than the budget
        (never the last one: it was just searched); a dropped one loads again when searched."""
        held = sum(i.nbytes for i in self.indexes.values())
        while held > self.memory_budget and len(self.indexes) > 1:
            workspace_id = next(iter(self.indexes))
            dropped = self.indexes.pop(workspace_id)
            held -= dropped.nbytes
            log.info(
                "similar_index_evicted",
                workspace_id=str(workspace_id),
                vectors=dropped.n,
                bytes=dropped.nbytes,
                held_bytes=held,
            )

    async def refresh(self, cur: aiopg.Cursor) -> int:
        """Apply the rows of loaded workspaces written since the watermark (and up to
        LOOKBACK seqs behind it, for rows that committed out of seq order); each row version
        once. The rows read."""
        top = await db.fetchval(cur, "SELECT coalesce(max(seq), 0) FROM ideas.embeddings")
        low = max(self.watermark - LOOKBACK, 0)
        # Each row version has a seq of its own, so one read once is never read again: a
        # refresh with nothing new reads nothing, not the look-back window again.
        self.fetched = {seq for seq in self.fetched if seq > low}
        rows = await db.fetchall(
            cur,
            "SELECT workspace_id, idea_id, vector, live, seq FROM ideas.embeddings"
            " WHERE seq > %s AND seq <= %s AND workspace_id = ANY(%s::uuid[])"
            " AND seq NOT IN (SELECT unnest(%s::bigint[])) ORDER BY seq",
            # an array literal: a list would be sent as ARRAY[...] of 1,024 expressions
            (
                low,
                top,
                [str(w) for w in self.indexes],
                "{" + ",".join(map(str, self.fetched)) + "}",
            ),
        )
        self.fetched.update(r["seq"] for r in rows)
        for r in rows:
            index = self.indexes.get(r["workspace_id"])
            if index is None or r["seq"] <= index.loaded_seq - LOOKBACK:
                continue  # the rows of its initial load are in it
            index.put(r["idea_id"], np.frombuffer(bytes(r["vector"]), np.int8), r["live"])
        self.watermark = max(self.watermark, top)
        if rows:
            self._evict()  # the indexes grew
        return len(rows)

    async def run_refresher(self, pool: aiopg.Pool) -> None:
        """LISTEN ideas_similar and refresh on each notice (and every second regardless)."""
        while True:
            try:
                async with db.listen_connection(self.dsn) as conn:
                    async with conn.cursor() as cur:
                        await cur.execute("LISTEN ideas_similar")
                        await cur.execute("SELECT coalesce(max(seq), 0) FROM ideas.embeddings")
                        if not self.watermark:
                            self.watermark = (await cur.fetchone())[0]
                    while True:
                        raise_if_cancelled()  # a cancellation an aiopg query swallowed
                        try:  # not wait_for: it can swallow a cancellation on 3.11
                            async with asyncio.timeout(1.0):
                                await conn.notifies.get()
                        except TimeoutError:
                            pass
                        while not conn.notifies.empty():
                            conn.notifies.get_nowait()
                        if self.indexes:
                            async with db.cursor(pool) as cur:
                                await self.refresh(cur)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # reconnect: the index catches up from the watermark
                log.warning("similar_refresh_failed", error=repr(err))
                await asyncio.sleep(1.0)

    # ---- searches --------------------------------------------------------------------------

    async def search(
        self,
        cur: aiopg.Cursor,
        workspace_id: uuid.UUID,
        q: np.ndarray,
        limit: int,
        min_similarity: float,
        exclude: uuid.UUID | None = None,
        text: str | None = None,
    ) -> list[dict[str, Any]]:
        """`[{"similarity", "idea": Idea}]`, most similar first."""
        return [
            {"similarity": s, "idea": fragment(idea)}
            for _, s, idea in await self.nearest(
                cur, workspace_id, q, limit, min_similarity, exclude, text
            )
        ]

    async def nearest(
        self,
        source: aiopg.Cursor | aiopg.Pool,
        workspace_id: uuid.UUID,
        q: np.ndarray,
        limit: int,
        min_similarity: float,
        exclude: uuid.UUID | None = None,
        text: str | None = None,
    ) -> list[tuple[uuid.UUID, float, str]]:
        """(id, similarity, Idea JSON) of the closest live ideas, most similar first. With
        the static model and the query's `text`, the transformer scores the static model's
        RERANK nearest (`_rerank`): every search and the automation rule answer so."""
        index = await self.index(workspace_id)
        rerank = self.static is not None and text is not None
        want = max(limit, RERANK) if rerank else limit
        # Room for the idea itself and for rows the index has not yet seen leave.
        if index.n <= INLINE_UP_TO:  # cheaper than a thread's hand-off
            found = index.top(q, want + 8)
        else:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self.search_pool, index.top, q, want + 8)
        skip = exclude.bytes if exclude is not None else None
        hits = [(raw, max(0.0, min(1.0, s))) for raw, s in found if raw != skip]
        if rerank and hits:
            assert text is not None
            hits = await self._rerank(source, workspace_id, text, hits, want)
        hits = [(raw, s) for raw, s in hits if s >= min_similarity]
        if not hits:
            return []
        # The first `limit` eligible hits, in the order found: PostgreSQL renders those alone
        # (an expensive output column is computed after the LIMIT), from a prepared statement
        # (planning over the ideas table's indexes costs more than the lookups).
        ids = "{" + ",".join(raw.hex() for raw, _ in hits) + "}"
        async with _cursor(source) as cur:
            await prepared.execute(cur, HITS_SQL, (ids, workspace_id, limit))
            rendered = await cur.fetchall()
        out = []
        for n, idea in rendered:
            raw, s = hits[n - 1]
            out.append((uuid.UUID(bytes=raw), round(s, 6), idea))
        return out

    async def idea_vector(
        self, cur: aiopg.Cursor, workspace_id: uuid.UUID, idea_id: uuid.UUID
    ) -> tuple[np.ndarray, str]:
        """An idea's vector (its stored one when current) and its text."""
        await prepared.execute(
            cur,
            "SELECT i.title, i.summary, e.vector, e.text_hash FROM ideas.ideas i"
            " LEFT JOIN ideas.embeddings e ON e.workspace_id = i.workspace_id"
            "  AND e.idea_id = i.id WHERE i.workspace_id = %s AND i.id = %s",
            (workspace_id, idea_id),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound("Idea not found")
        title, summary, vector, stored_hash = row
        text = idea_text(title, summary)
        if vector is not None and bytes(stored_hash) == text_hash(self.model_id, text):
            return np.frombuffer(bytes(vector), np.int8).astype(np.float32) / 127.0, text
        return await self.embed(workspace_id, text), text


SIMILAR = web.AppKey("similar", Similar)


def load_index(dsn: str, workspace_id: uuid.UUID) -> tuple[Index, int]:
    """A workspace's live vectors, read with COPY (binary rows of fixed size), and the highest
    seq at the start of the read."""
    buf = io.BytesIO()
    conn = psycopg2.connect(dsn)
    try:
        # One snapshot for the highest seq and the rows, so every row up to it is loaded
        # except those committed later out of seq order (the refresh's look-back takes them).
        conn.set_session(readonly=True, isolation_level="REPEATABLE READ")
        with conn, conn.cursor() as cur:
            cur.execute("SELECT coalesce(max(seq), 0) FROM ideas.embeddings")
            seq = cur.fetchone()[0]
            cur.copy_expert(
                cur.mogrify(
                    "COPY (SELECT idea_id, vector FROM ideas.embeddings WHERE workspace_id = %s"
                    " AND live AND length(vector) = %s) TO STDOUT (FORMAT binary)",
                    (str(workspace_id), DIM),
                ).decode(),
                buf,
            )
    finally:
        conn.close()
    raw = buf.getbuffer()
    row = np.dtype(
        [("fields", ">i2"), ("l1", ">i4"), ("id", "V16"), ("l2", ">i4"), ("vec", "i1", (DIM,))]
    )
    body = raw[19 : len(raw) - 2]  # the signature and header; the trailer
    rows = np.frombuffer(body, dtype=row)
    index = Index()
    index.loaded_seq = seq
    if len(rows):
        ids = np.frombuffer(rows["id"].tobytes(), np.uint64).reshape(-1, 2)
        index.bulk(ids, np.ascontiguousarray(rows["vec"]))
    return index, seq


# ---- the embedder's writes: an idea's embedding follows its text and state --------------------


async def upsert_embeddings(
    pool: aiopg.Pool,
    embed: Callable[[list[str]], Awaitable[np.ndarray]],
    ideas: list[tuple[str, str]],
    model_id: str,
) -> int:
    """Bring the rows in `ideas.embeddings` of these (workspace id, idea id) to the ideas'
    current text and state; the rows written. The model runs with no transaction open; a
    row is written only if its idea's text is still the one embedded (an edit since has an
    event of its own), with the state read under a lock, in one transaction."""
    ideas = sorted(set(ideas))
    keys = ([w for w, _ in ideas], [i for _, i in ideas])
    async with db.cursor(pool) as cur:
        rows = await db.fetchall(
            cur,
            f"SELECT i.workspace_id, i.id, i.title, i.summary, ({ELIGIBLE}) AS live,"
            " e.text_hash, e.live AS was_live FROM ideas.ideas i"
            " LEFT JOIN ideas.embeddings e ON e.workspace_id = i.workspace_id AND e.idea_id = i.id"
            " WHERE (i.workspace_id, i.id) IN (SELECT * FROM unnest(%s::uuid[], %s::uuid[]))",
            keys,
        )
    todo: dict[tuple[uuid.UUID, uuid.UUID], tuple[bytes, str | None]] = {}
    for r in rows:
        text = idea_text(r["title"], r["summary"])
        digest = text_hash(model_id, text)
        same_text = r["text_hash"] is not None and bytes(r["text_hash"]) == digest
        if not same_text or r["was_live"] != r["live"]:  # else only a vote, a score, a repeat
            todo[(r["workspace_id"], r["id"])] = (digest, None if same_text else text)
    if not todo:
        return 0
    texts = [t for _, t in todo.values() if t is not None]
    vectors = iter(quantize(await embed(texts)) if texts else [])
    fresh = {key: next(vectors) for key, (_, t) in todo.items() if t is not None}
    written = 0
    async with db.transaction(pool) as cur:
        now = await db.fetchall(
            cur,
            f"SELECT i.workspace_id, i.id, i.title, i.summary, ({ELIGIBLE}) AS live"
            " FROM ideas.ideas i WHERE (i.workspace_id, i.id) IN"
            " (SELECT * FROM unnest(%s::uuid[], %s::uuid[])) ORDER BY i.id FOR SHARE",
            ([str(w) for w, _ in todo], [str(i) for _, i in todo]),
        )
        for r in now:
            key = (r["workspace_id"], r["id"])
            digest, _ = todo[key]
            if text_hash(model_id, idea_text(r["title"], r["summary"])) != digest:
                continue
            vec = fresh.get(key)
            if vec is None:
                await cur.execute(
                    "UPDATE ideas.embeddings SET live = %s, seq = nextval("
                    "'ideas.embedding_seq'), updated_at = now() WHERE workspace_id = %s"
                    " AND idea_id = %s AND live <> %s",
                    (r["live"], key[0], key[1], r["live"]),
                )
            else:
                await cur.execute(
                    "INSERT INTO ideas.embeddings AS e (workspace_id, idea_id, vector, text_hash,"
                    " live) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (workspace_id, idea_id) DO"
                    " UPDATE SET vector = EXCLUDED.vector, text_hash = EXCLUDED.text_hash,"
                    " live = EXCLUDED.live, seq = nextval('ideas.embedding_seq'),"
                    " updated_at = now()",
                    (key[0], key[1], vec.tobytes(), digest, r["live"]),
                )
            written += cur.rowcount
        if written:
            await cur.execute("NOTIFY ideas_similar")
    return written


# ---- catching up: rows of another model, ideas with none -----------------------------------

CATCH_UP_LOCK = 0x1D5_5E4  # the advisory lock one embedder at a time catches up under
CATCH_UP_BATCH = 256
# The ideas (by id, past a point) whose row is missing or was computed from another model or
# text: `text_hash` computed in SQL as in Python (sha256 of the model, a newline, the text).
STALE_SQL = (
    "SELECT i.workspace_id, i.id FROM ideas.ideas i LEFT JOIN ideas.embeddings e"
    " ON e.workspace_id = i.workspace_id AND e.idea_id = i.id WHERE i.id > %s"
    " AND e.text_hash IS DISTINCT FROM substring(sha256(convert_to(%s || E'\\n' ||"
    " CASE WHEN coalesce(i.summary, '') = '' THEN i.title ELSE i.title || '. ' || i.summary END,"
    " 'UTF8')) FROM 1 FOR 16) ORDER BY i.id LIMIT %s"
)


async def catch_up(
    pool: aiopg.Pool, embed: Callable[[list[str]], Awaitable[np.ndarray]], model_id: str
) -> int | None:
    """Embed, with the current model, every idea whose row is missing or stale: after the
    model changed (SIMILAR_MODEL), or ideas an event never reached. One embedder at a time
    (an advisory lock; None when another holds it), in batches through `upsert_embeddings`,
    in one pass over the ideas by id; the ideas embedded."""
    async with pool.acquire() as conn, conn.cursor() as lock:
        await lock.execute("SELECT pg_try_advisory_lock(%s)", (CATCH_UP_LOCK,))
        if not (await lock.fetchone())[0]:
            return None
        try:
            done, after = 0, uuid.UUID(int=0)
            while True:
                await lock.execute(STALE_SQL, (after, model_id, CATCH_UP_BATCH))
                stale = await lock.fetchall()
                if not stale:
                    return done
                await upsert_embeddings(pool, embed, [(w, i) for w, i in stale], model_id)
                done, after = done + len(stale), stale[-1][1]
        finally:
            await lock.execute("SELECT pg_advisory_unlock(%s)", (CATCH_UP_LOCK,))


# ---- the admin rebuild (ideasctl similar rebuild) ---------------------------------------------


def rebuild(
    conn: Any,
    workspace_id: str | None = None,
    batch: int = 32,
    embedder: Embedder | StaticEmbedder | None = None,
) -> dict[str, int]:
    """Compute every idea's embedding again (psycopg2; commits a batch at a time) with
    `embedder` (by default the static model)."""
    embedder = embedder or make_embedder("static")
    counts = {"ideas": 0, "embedded": 0}
    with conn.cursor() as cur:
        cur.execute(
            f"SELECT i.workspace_id, i.id, i.title, i.summary, ({ELIGIBLE})"
            " FROM ideas.ideas i WHERE %(ws)s::uuid IS NULL OR i.workspace_id = %(ws)s"
            " ORDER BY i.workspace_id, i.id",
            {"ws": workspace_id},
        )
        rows = cur.fetchall()
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        texts = [idea_text(r[2], r[3]) for r in part]
        vecs = quantize(np.vstack([embedder.embed([t]) for t in texts]))
        with conn, conn.cursor() as cur:
            for r, t, v in zip(part, texts, vecs, strict=True):
                cur.execute(
                    "INSERT INTO ideas.embeddings AS e (workspace_id, idea_id, vector,"
                    " text_hash, live) VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (workspace_id, idea_id) DO UPDATE SET vector = EXCLUDED.vector,"
                    " text_hash = EXCLUDED.text_hash, live = EXCLUDED.live,"
                    " seq = nextval('ideas.embedding_seq'), updated_at = now()",
                    (r[0], r[1], v.tobytes(), text_hash(embedder.model_id, t), r[4]),
                )
            cur.execute("NOTIFY ideas_similar")
        counts["ideas"] += len(part)
        counts["embedded"] += len(part)
    return counts
