"""Similar ideas by meaning (docs/similar.md): the in-memory index of each workspace, its upkeep
from `similar.embeddings`, and the searches.

- Search texts are embedded by the transformer (`SIMILAR_MODEL=mpnet`, the default) in worker
  processes at a lower CPU priority (`embedding.EmbedPool`, at most `EMBED_QUEUE` texts
  waiting): never on the event loop, never under its GIL; or by the static model in the
  process (tens of microseconds), whose RERANK nearest ideas the transformer then scores, its
  cosine the answer's similarity (`_rerank`). The automation rule's duplicates are the same
  search's answers (`candidates`): one number for both.
- Each process keeps, per workspace it has searched, an index: ids, int8 vectors, their sign
  bits, and which are live. A search with up to `RESCORE` live vectors is exact; above that,
  the Hamming distance of the sign bits picks `RESCORE` candidates, scored exactly.
- The embedder process (embedder.py) consumes the `similar` queue, keeps the service's copy of
  the ideas and writes their rows in `similar.embeddings` (store.py), then notifies
  `similar_index`; every process applies the rows past the last `seq` it saw (a look-back
  covers rows committed out of seq order).
- The answers' Idea forms are the ideas service's (`render`: its internal lookup, through the
  peer client); an idea it reports deleted or merged is left out.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import threading
import uuid
from collections import OrderedDict
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
from libs.common.caller import Caller
from libs.common.errors import ServiceUnavailable
from libs.common.peers import Peers
from libs.common.tasks import raise_if_cancelled

from .embedding import (
    DIM,
    TRANSFORMERS,
    EmbedPool,
    StaticEmbedder,
    idea_text,
    search_transformer,
)

log = structlog.get_logger("similar")

SEARCH_TEXTS = Counter(
    "ims_similar_search_texts_total",
    "Search texts embedded, by where the vector came from (the model, or the recent texts)",
    ["source"],
)
REFRESH_ROWS = Counter(
    "ims_similar_refresh_rows_total",
    "Rows of similar.embeddings the search process's refreshes read into its indexes",
)

RESCORE = 1024  # candidates scored exactly (and the size up to which a search is exact)
EMBED_QUEUE = 64  # search texts waiting for the search worker before a 503
LOOKBACK = 1024  # seqs re-read behind the watermark (rows committed out of order)
COARSE_WORDS = 3  # words of the first pass over a large workspace (192 of a vector's bits)
COARSE_KEEP = 16 * RESCORE  # rows the first pass keeps for the full distance
COARSE_FROM = 4 * COARSE_KEEP  # rows from which a search makes the first pass
INLINE_UP_TO = RESCORE  # rows searched on the event loop (exact: a quarter of a millisecond)
RECENT_TEXTS = 1024  # search texts (per workspace) whose vectors a process keeps
RERANK = 50  # with the static model: its nearest ideas the transformer scores (a search's answer)
VERIFIED_TEXTS = 32768  # texts (per workspace) whose vectors by the transformer a process keeps
RENDER_MARGIN = 8  # hits asked of the ideas service beyond `limit` (those it says left)
LOOKUP_MAX = 1000  # ids one call of the ideas service's lookup takes at most
# An idea of the service's copy that may show: neither deleted nor merged.
ELIGIBLE = "i.status <> 'deleted' AND i.merged_into_id IS NULL"
# The static model's candidates (ids, best first): the first eligible ones' texts (up to the
# last parameter), each with its place among them, for the transformer to score. The ids go as
# one array literal of their hex digits: adapting a text costs psycopg2 less than a list of
# UUIDs.
TEXTS_SQL = (
    "SELECT h.n, i.title, i.summary FROM unnest(%s::uuid[]) WITH ORDINALITY h(id, n)"
    ' JOIN "similar".ideas i ON i.idea_id = h.id AND i.workspace_id = %s'
    f" WHERE {ELIGIBLE} ORDER BY h.n LIMIT %s"
)


def text_hash(model_id: str, text: str) -> bytes:
    """What a row's vector was computed from: the model and the text. A row of another model
    (SIMILAR_MODEL changed) is embedded again by the next event of its idea, or at once by
    `ideasctl similar rebuild`."""
    return hashlib.sha256(f"{model_id}\n{text}".encode()).digest()[:16]


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """A vector's signs, 64 components a uint64 word."""
    return np.packbits(vectors > 0, axis=-1).view(np.uint64).reshape(-1, vectors.shape[-1] // 64)


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

    def __init__(self, dim: int = DIM) -> None:
        self.dim, self.words = dim, dim // 64  # uint64 words of sign bits a vector
        self.loaded_seq = 0  # every row up to this seq was in the initial load's snapshot
        self.sorted_hi = np.zeros(0, np.uint64)
        self.sorted_at = np.zeros(0, np.int64)
        self.added: dict[tuple[int, int], int] = {}
        self.n = 0
        self.ids = np.zeros((0, 2), np.uint64)
        self.vecs = np.zeros((0, dim), np.int8)
        self.bits = np.zeros((self.words, 0), np.uint64)  # word-major: one XOR pass a word
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

        bits = np.zeros((self.words, cap), np.uint64)
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
            words = COARSE_WORDS if n > COARSE_FROM else self.words
            dist = hamming(bits, qbits, n, words, np.uint8 if words * 64 < 255 else np.uint16)
            if not live[:n].all():
                np.putmask(dist, ~live[:n], words * 64 + 1)  # beyond any live row
            if words == self.words:
                cand = nearest_rows(dist, RESCORE)
            else:
                cand = nearest_rows(dist, COARSE_KEEP, sample=True)
                full = dist[cand].astype(np.uint16)
                for w in range(words, self.words):
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


@dataclass
class Similar:
    """The process's indexes and executors (one per search process, on the app)."""

    dsn: str
    model: str = "minilm"
    workers: int = 1
    nice: int = 10
    idle: bool = True  # the search texts' workers in the idle scheduling class
    memory_budget: int = 1024 * 2**20  # bytes of indexes kept (SIMILAR_INDEX_MEMORY_MB)
    # The process's pool, set when the app starts: a search holds one of its connections only
    # for each query, never while an index loads or a model runs.
    pool: aiopg.Pool | None = None
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
        # The transformer of the search texts (with the static model: of its candidates).
        self.spec = search_transformer(self.model)
        stored = StaticEmbedder if self.static else TRANSFORMERS[self.model]
        # What the stored vectors are: their model, width, and the join of an idea's text.
        self.model_id, self.dim, self.join = stored.model_id, stored.dim, stored.join
        self.query_pool = EmbedPool(self.workers, self.nice, self.idle, self.spec)
        self.search_pool = ThreadPoolExecutor(2, thread_name_prefix="search")
        self.waiting = threading.BoundedSemaphore(EMBED_QUEUE)

    def text(self, title: str, summary: str | None) -> str:
        """An idea's (or a search's) text, as the model compares it (its join)."""
        return idea_text(title, summary, self.join)

    @property
    def _pool(self) -> aiopg.Pool:
        assert self.pool is not None, "the app sets the pool when it starts"
        return self.pool

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

    async def candidates(
        self, workspace_id: uuid.UUID, text: str, limit: int, min_similarity: float
    ) -> list[tuple[uuid.UUID, float]]:
        """The automation rule's duplicates by meaning: the ideas `POST /ideas/similar` answers
        for `text`, best first, at or above `min_similarity`, with the similarity it answers
        (docs/similar.md): the same search, so the Signal records the number that search
        answers. The ideas service takes the first that may still take a Signal (neither
        deleted nor merged: its own rows say, in its creating transaction)."""
        vector = await self.embed(workspace_id, text)
        return await self.nearest(workspace_id, vector, limit, min_similarity, text=text)

    async def scored(self, workspace_id: uuid.UUID, texts: list[str]) -> np.ndarray:
        """The transformer's unit vectors of texts: those it scored lately from the process's
        last VERIFIED_TEXTS (kept per workspace, as float16), the others in one call."""
        out = np.empty((len(texts), self.spec.dim), np.float32)
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
        workspace_id: uuid.UUID,
        text: str,
        hits: list[tuple[bytes, float]],
        keep: int,
    ) -> list[tuple[bytes, float]]:
        """The static model's first `keep` eligible hits scored by the transformer against
        `text`, best first: the static model finds the candidates (microseconds over the
        whole workspace), the transformer ranks them and its cosine is their similarity."""
        ids = "{" + ",".join(raw.hex() for raw, _ in hits) + "}"
        async with db.cursor(self._pool) as cur:
            await cur.execute(TEXTS_SQL, (ids, workspace_id, keep))
            rows = await cur.fetchall()
        if not rows:
            return []
        vectors = await self.scored(
            workspace_id,
            [text, *(idea_text(title, summary, self.spec.join) for _, title, summary in rows)],
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
            self.search_pool, load_index, self.dsn, workspace_id, self.dim
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
        once. The rows read. The watermark moves on with no workspace loaded too: a workspace
        loaded later takes its rows up to then from its load, not from the refresh after it
        (a million rows written in bulk while the process had no index would otherwise be
        read again, on its event loop)."""
        top = await db.fetchval(cur, 'SELECT coalesce(max(seq), 0) FROM "similar".embeddings')
        if not self.indexes:
            self.watermark, self.fetched = max(self.watermark, top), set()
            return 0
        low = max(self.watermark - LOOKBACK, 0)
        # Each row version has a seq of its own, so one read once is never read again: a
        # refresh with nothing new reads nothing, not the look-back window again.
        self.fetched = {seq for seq in self.fetched if seq > low}
        # Per workspace, nothing its load already holds (the look-back behind its snapshot).
        loaded = [(str(w), max(low, i.loaded_seq - LOOKBACK)) for w, i in self.indexes.items()]
        rows = await db.fetchall(
            cur,
            'SELECT e.workspace_id, e.idea_id, e.vector, e.live, e.seq FROM "similar".embeddings e'
            " JOIN unnest(%s::uuid[], %s::bigint[]) AS w(id, low)"
            " ON e.workspace_id = w.id AND e.seq > w.low"
            " WHERE e.seq > %s AND e.seq <= %s"
            " AND e.seq NOT IN (SELECT unnest(%s::bigint[])) ORDER BY e.seq",
            # an array literal: a list would be sent as ARRAY[...] of 1,024 expressions
            (
                [w for w, _ in loaded],
                [b for _, b in loaded],
                low,
                top,
                "{" + ",".join(map(str, self.fetched)) + "}",
            ),
        )
        self.fetched.update(r["seq"] for r in rows)
        REFRESH_ROWS.inc(len(rows))
        for r in rows:
            index = self.indexes.get(r["workspace_id"])
            if index is None or r["seq"] <= index.loaded_seq - LOOKBACK:
                continue  # the rows of its initial load are in it
            vector = np.frombuffer(bytes(r["vector"]), np.int8)
            if len(vector) == index.dim:
                index.put(r["idea_id"], vector, r["live"])
            else:  # another model's (SIMILAR_MODEL changed): out until embedded again
                index.put(r["idea_id"], np.zeros(index.dim, np.int8), False)
        self.watermark = max(self.watermark, top)
        if rows:
            self._evict()  # the indexes grew
        return len(rows)

    async def run_refresher(self, pool: aiopg.Pool) -> None:
        """LISTEN similar_index and refresh on each notice (and every second regardless)."""
        while True:
            try:
                async with db.listen_connection(self.dsn) as conn:
                    async with conn.cursor() as cur:
                        await cur.execute("LISTEN similar_index")
                        await cur.execute('SELECT coalesce(max(seq), 0) FROM "similar".embeddings')
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
                        async with db.cursor(pool) as cur:
                            await self.refresh(cur)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # reconnect: the index catches up from the watermark
                log.warning("similar_refresh_failed", error=repr(err))
                await asyncio.sleep(1.0)

    # ---- searches --------------------------------------------------------------------------

    async def nearest(
        self,
        workspace_id: uuid.UUID,
        q: np.ndarray,
        limit: int,
        min_similarity: float,
        exclude: uuid.UUID | None = None,
        text: str | None = None,
    ) -> list[tuple[uuid.UUID, float]]:
        """(id, similarity) of the closest live ideas, most similar first, at most `limit` +
        RENDER_MARGIN (room for ideas the ideas service says have left since the index heard
        of them). With the static model and the query's `text`, the transformer scores the
        static model's RERANK nearest (`_rerank`): every search and the automation rule
        answer so."""
        index = await self.index(workspace_id)
        rerank = self.static is not None and text is not None
        want = max(limit, RERANK) if rerank else limit
        # Room for the idea itself and for rows the index has not yet seen leave.
        if index.n <= INLINE_UP_TO:  # cheaper than a thread's hand-off
            found = index.top(q, want + RENDER_MARGIN)
        else:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self.search_pool, index.top, q, want + RENDER_MARGIN)
        skip = exclude.bytes if exclude is not None else None
        hits = [(raw, max(0.0, min(1.0, s))) for raw, s in found if raw != skip]
        if rerank and hits:
            assert text is not None
            hits = await self._rerank(workspace_id, text, hits, want + RENDER_MARGIN)
        return [
            (uuid.UUID(bytes=raw), round(s, 6))
            for raw, s in hits[: limit + RENDER_MARGIN]
            if s >= min_similarity
        ]

    async def idea_vector(
        self, peers: Peers, who: Caller, idea_id: uuid.UUID
    ) -> tuple[np.ndarray, str]:
        """An idea's vector (its stored one when current) and its text: from the service's
        copy, or, for an idea the copy does not hold yet (its event on the way), its title and
        summary as the ideas service answers them (404 when it has no such idea)."""
        async with db.cursor(self._pool) as cur:
            await cur.execute(
                'SELECT i.title, i.summary, e.vector, e.text_hash FROM "similar".ideas i'
                ' LEFT JOIN "similar".embeddings e ON e.workspace_id = i.workspace_id'
                "  AND e.idea_id = i.idea_id WHERE i.workspace_id = %s AND i.idea_id = %s",
                (who.workspace_id, idea_id),
            )
            row = await cur.fetchone()
        if row is None:
            idea = await peers.data(
                who, "ideas", "GET", f"/internal/ideas/{idea_id}", missing="Idea not found"
            )
            row = (idea["title"], idea["summary"], None, None)
        title, summary, vector, stored_hash = row
        text = self.text(title, summary)
        if vector is not None and bytes(stored_hash) == text_hash(self.model_id, text):
            return np.frombuffer(bytes(vector), np.int8).astype(np.float32) / 127.0, text
        return await self.embed(who.workspace_id, text), text


async def render(
    peers: Peers, who: Caller, hits: list[tuple[uuid.UUID, float]], limit: int
) -> list[dict[str, Any]]:
    """`[{"similarity", "idea": Idea}]` of the first `limit` hits the ideas service says may
    show (neither deleted nor merged), in the hits' order and with their similarity: the Idea
    forms are the ideas service's (its internal lookup), the order and the numbers this
    service's."""
    out: list[dict[str, Any]] = []
    start = 0
    while len(out) < limit and start < len(hits):
        part = hits[start : start + min(LOOKUP_MAX, limit - len(out) + RENDER_MARGIN)]
        start += len(part)
        ideas = await peers.data(
            who, "ideas", "POST", "/internal/ideas/lookup", json={"ids": [i for i, _ in part]}
        )
        by_id = {idea["id"]: idea for idea in ideas}
        for idea_id, similarity in part:
            idea = by_id.get(str(idea_id))
            if idea is None or idea["status"] == "deleted" or idea["mergedIntoId"] is not None:
                continue
            out.append({"similarity": similarity, "idea": idea})
            if len(out) == limit:
                break
    return out


SIMILAR = web.AppKey("similar", Similar)


def load_index(dsn: str, workspace_id: uuid.UUID, dim: int = DIM) -> tuple[Index, int]:
    """A workspace's live vectors, read with COPY (binary rows of fixed size), and the highest
    seq at the start of the read."""
    buf = io.BytesIO()
    conn = psycopg2.connect(dsn)
    try:
        # One snapshot for the highest seq and the rows, so every row up to it is loaded
        # except those committed later out of seq order (the refresh's look-back takes them).
        conn.set_session(readonly=True, isolation_level="REPEATABLE READ")
        with conn, conn.cursor() as cur:
            cur.execute('SELECT coalesce(max(seq), 0) FROM "similar".embeddings')
            seq = cur.fetchone()[0]
            cur.copy_expert(
                cur.mogrify(
                    'COPY (SELECT idea_id, vector FROM "similar".embeddings WHERE workspace_id = %s'
                    " AND live AND length(vector) = %s) TO STDOUT (FORMAT binary)",
                    (str(workspace_id), dim),
                ).decode(),
                buf,
            )
    finally:
        conn.close()
    raw = buf.getbuffer()
    row = np.dtype(
        [("fields", ">i2"), ("l1", ">i4"), ("id", "V16"), ("l2", ">i4"), ("vec", "i1", (dim,))]
    )
    body = raw[19 : len(raw) - 2]  # the signature and header; the trailer
    rows = np.frombuffer(body, dtype=row)
    index = Index(dim)
    index.loaded_seq = seq
    if len(rows):
        ids = np.frombuffer(rows["id"].tobytes(), np.uint64).reshape(-1, 2)
        index.bulk(ids, np.ascontiguousarray(rows["vec"]))
    return index, seq
