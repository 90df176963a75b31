"""all-mpnet-base-v2 to an int8 ONNX file: the part of `build_mpnet` that needs PyTorch. It runs
under the build's own virtual environment (torch, transformers, onnx, onnxruntime, tokenizers,
numpy), never in the project's, and imports nothing of the project:

    python -I mpnet_export.py MODEL_DIR CALIBRATION WORK_DIR

MODEL_DIR is the model's directory (config.json, model.safetensors, tokenizer.json),
CALIBRATION the calibration texts (one a line), WORK_DIR where the files are made:

- `fp32.onnx`: the model traced by PyTorch's TorchScript exporter (opset 17). Inputs
  `input_ids` and `attention_mask` (int64, [batch, sequence], both axes dynamic); output
  `sentence_embedding` ([batch, 768]): the last hidden state's mean over the attention mask,
  L2-normalised, inside the graph (sentence-transformers' Pooling and Normalize);
- `int8.onnx`: the same graph with its 72 weight MatMuls rescaled (`smooth`), then quantized by
  onnxruntime's `quantize_static` (`quantize`: int8 weights, one scale an output channel; the
  MatMuls' inputs uint8 at scales fixed by the calibration texts), its word-embedding table
  stored as int8 with one scale a row (`embedding_table`);
- `report.json`: the versions used, the files' fidelity figures (`check`) and the wall seconds
  of each step. `build_mpnet` judges the figures and keeps the int8 file.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from onnx import numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data
from tokenizers import Tokenizer

OPSET = 17
MAX_TOKENS = 384  # sentence-transformers' max_seq_length for all-mpnet-base-v2
ALPHA = 0.75  # how much of each channel's range moves from the activation to the weight
DIM = 768
CHECK_STEP = 8  # the float32 file against PyTorch, and in a batch, on every 8th text
BATCH = 16  # the int8 file in padded batches of 16 against one text at a time
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"  # the end of the table's name


class SentenceEmbedding(torch.nn.Module):
    """The transformer, then the mean of its last hidden state over the attention mask, L2-
    normalised."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Any, attention_mask: Any) -> Any:
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask)[0]
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return pooled / pooled.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def export(model_dir: Path, path: Path) -> SentenceEmbedding:
    """The float32 ONNX file at `path`; the PyTorch module it was traced from."""
    transformers.utils.logging.disable_progress_bar()
    model = transformers.AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    wrapped = SentenceEmbedding(model).eval()
    ids = torch.tensor([[0, 2023, 2003, 1037, 3231, 2]], dtype=torch.long)
    with torch.no_grad(), warnings.catch_warnings():
        # the tracer warns of Python values it fixes in the graph, and of indexing that would
        # be wrong with negative indexes: the graph follows the inputs' shapes all the same
        # (`check` compares lengths up to MAX_TOKENS, and padded batches)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", "Exporting aten::index operator", UserWarning)
        # the TorchScript exporter is deprecated; the recipe's figures are its
        warnings.filterwarnings(
            "ignore", "You are using the legacy TorchScript", DeprecationWarning
        )
        torch.onnx.export(
            wrapped,
            (ids, torch.ones_like(ids)),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,  # the TorchScript exporter: opset 17 and dynamic_axes
        )
    onnx.checker.check_model(str(path))
    return wrapped


def session(path: Path) -> Any:
    """A session whose threads sleep between calls: they would otherwise spin, and one text
    a call, on a machine busy with other work, they then spend most of their time waiting for
    each other."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def tokens(tokenizer: Tokenizer, text: str) -> np.ndarray:
    """One text's token ids as a batch of one (no padding)."""
    return np.array([tokenizer.encode(text).ids], np.int64)


def embed(run: Any, tokenizer: Tokenizer, texts: list[str]) -> np.ndarray:
    """The texts' vectors, one text a model call, as the service embeds them."""
    out = np.empty((len(texts), DIM), np.float32)
    for row, text in enumerate(texts):
        ids = tokens(tokenizer, text)
        out[row] = run.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
    return out


def smooth(fp32: Path, path: Path, tokenizer: Tokenizer, texts: list[str], work: Path) -> int:
    """SmoothQuant's rescaling, for the quantization of `quantize`: it quantizes a MatMul's
    input with one scale for the whole tensor, and a few input channels with large values (the
    feed-forward output MatMul's, above all) leave the others few levels. For each
    MatMul Y = X W with a constant W ([in, out]), s_j = max|X_j|^ALPHA / max|W_j,:|^(1 - ALPHA)
    (max|X_j| measured by the float32 graph on `texts`); the graph gets X / s (a Mul before the
    MatMul) and diag(s) W: the same product, with the channels' ranges evened out between the
    activation and the weight. Writes the float32 graph so rescaled to `path`; the number of
    MatMuls rescaled."""
    model = onnx.load(str(fp32))
    constants = {i.name: i for i in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in constants]
    inputs = sorted({n.input[0] for n in matmuls})
    # the MatMuls' inputs as outputs of a copy of the graph, their channels' maxima measured
    for name in inputs:
        model.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    probe = work / "calibrate.onnx"
    onnx.save(model, str(probe))
    del model
    run = session(probe)
    maxima: dict[str, np.ndarray] = {}
    for text in texts:
        ids = tokens(tokenizer, text)
        values = run.run(inputs, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        for name, value in zip(inputs, values, strict=True):
            peak = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            maxima[name] = np.maximum(maxima[name], peak) if name in maxima else peak
    del run
    probe.unlink()

    model = onnx.load(str(fp32))
    constants = {i.name: i for i in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in constants]
    muls = []
    for k, node in enumerate(matmuls):
        weight = numpy_helper.to_array(constants[node.input[1]]).astype(np.float32)
        x_max = np.maximum(maxima[node.input[0]], 1e-5)
        w_max = np.maximum(np.abs(weight).max(axis=1), 1e-5)
        scale = (x_max**ALPHA / w_max ** (1 - ALPHA)).astype(np.float32)
        constants[node.input[1]].CopyFrom(
            numpy_helper.from_array(weight * scale[:, None], node.input[1])
        )
        inverse = numpy_helper.from_array((1 / scale).astype(np.float32), f"smooth_inv_{k}")
        model.graph.initializer.append(inverse)
        scaled = f"{node.input[0]}_smooth_{k}"
        muls.append(
            (
                node,
                onnx.helper.make_node(
                    "Mul", [node.input[0], inverse.name], [scaled], name=f"smooth_mul_{k}"
                ),
            )
        )
        node.input[0] = scaled
    for node, mul in muls:  # each Mul just before its MatMul: the nodes stay in order
        model.graph.node.insert(list(model.graph.node).index(node), mul)
    onnx.save(model, str(path))
    return len(matmuls)


class Texts(CalibrationDataReader):
    """The calibration runs' inputs: each text alone, without padding."""

    def __init__(self, tokenizer: Tokenizer, texts: list[str]) -> None:
        self.tokenizer = tokenizer
        self.texts = iter(texts)

    def get_next(self) -> dict[str, np.ndarray] | None:
        text = next(self.texts, None)
        if text is None:
            return None
        ids = tokens(self.tokenizer, text)
        return {"input_ids": ids, "attention_mask": np.ones_like(ids)}


def quantize(smoothed: Path, path: Path, tokenizer: Tokenizer, texts: list[str], work: Path) -> int:
    """Static quantization, QDQ format: int8 weights, a scale for each output channel, full
    range; each MatMul's input uint8 at a scale and zero point fixed once, from its minimum and
    maximum over `texts` (MinMax calibration, one text a run). The 24 attention MatMuls whose
    inputs are both activations (Q·Kᵀ and P·V) stay float32, and no MatMul's output is
    quantized: the feed-forward output MatMuls' outputs carry the residual stream's outlier
    channels (up to about 1500), which a fixed uint8 scale would flatten (cosine 0.46 with
    the float32 vectors). Each MatMul then runs as an integer product with a float output, as
    under dynamic quantization, but at constant scales: a text's vector does not depend on the
    texts batched with it. The ranges are collected a `collect_data` call a text (some of
    onnxruntime 1.32's calibrators fail on runs of different lengths in one call) and handed to
    `quantize_static` as its calibration cache. (It logs a warning that
    pre-processing, shape inference, may help; the figures of `check` are without it.) The
    number of MatMuls left float32."""
    model = onnx.load(str(smoothed), load_external_data=False)
    constants = {i.name for i in model.graph.initializer}
    excluded = [
        n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1] not in constants
    ]
    del model
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        calibrator = create_calibrator(
            smoothed,
            ["MatMul"],
            augmented_model_path=str(work / "augmented.onnx"),
            calibrate_method=CalibrationMethod.MinMax,
        )
        for text in texts:
            calibrator.collect_data(Texts(tokenizer, [text]))
        ranges = work / "ranges.json"
        save_tensors_data(calibrator.compute_data(), ranges)
        del calibrator
        (work / "augmented.onnx").unlink(missing_ok=True)
        quantize_static(
            str(smoothed),
            str(path),
            None,
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            reduce_range=False,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=excluded,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={"OpTypesToExcludeOutputQuantization": ["MatMul"]},
            calibration_cache_path=str(ranges),
        )
        ranges.unlink()
    finally:
        root.setLevel(level)
    return len(excluded)


def embedding_table(path: Path) -> None:
    """The word-embedding table ([30527, 768], 94 MB of float32), which `quantize` leaves
    alone, rewritten in place as int8 with one symmetric scale a row (a token id): the Gather
    of a row becomes Cast(Gather(int8 table)) * Gather(scales). A fixed function of the token
    id, so the vectors stay independent of the batch; the file shrinks from 182 MB to 112."""
    model = onnx.load(str(path))
    tables = {i.name: i for i in model.graph.initializer if i.name.endswith(WORD_EMBEDDINGS)}
    gathers = [
        (k, n)
        for k, n in enumerate(model.graph.node)
        if n.op_type == "Gather" and n.input[0] in tables
    ]
    assert len(tables) == 1 and len(gathers) == 1, (list(tables), len(gathers))
    k, node = gathers[0]
    table = tables[node.input[0]]
    weight = numpy_helper.to_array(table).astype(np.float32)
    scale = (np.maximum(np.abs(weight).max(axis=1, keepdims=True), 1e-8) / 127).astype(np.float32)
    quantized = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    model.graph.initializer.remove(table)
    model.graph.initializer.extend(
        [
            numpy_helper.from_array(quantized, "word_embeddings_int8"),
            numpy_helper.from_array(scale, "word_embeddings_scale"),
        ]
    )
    ids = node.input[1]
    make = onnx.helper.make_node
    replacement = [
        make("Gather", ["word_embeddings_int8", ids], ["word_embeddings_q"], name="word_emb_q"),
        make("Gather", ["word_embeddings_scale", ids], ["word_embeddings_s"], name="word_emb_s"),
        make(
            "Cast",
            ["word_embeddings_q"],
            ["word_embeddings_f"],
            to=onnx.TensorProto.FLOAT,
            name="word_emb_cast",
        ),
        make("Mul", ["word_embeddings_f", "word_embeddings_s"], [node.output[0]], name="word_emb"),
    ]
    model.graph.node.remove(node)
    for offset, new in enumerate(replacement):
        model.graph.node.insert(k + offset, new)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def padded(tokenizer: Tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The texts as one batch: token ids padded with `<pad>`, the attention mask 0 there."""
    encodings = tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(texts), width), tokenizer.token_to_id("<pad>"), np.int64)
    mask = np.zeros((len(texts), width), np.int64)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)], mask[row, : len(e.ids)] = e.ids, 1
    return ids, mask


def check(
    module: SentenceEmbedding, fp32: Path, int8: Path, tokenizer: Tokenizer, texts: list[str]
) -> dict[str, Any]:
    """The figures `build_mpnet` judges, each the minimum (and mean) cosine of two ways to a
    text's vector:

    - `int8`: the int8 file against the float32 one, one text at a time, on the calibration
      texts;
    - `int8_batch`: the int8 file on the calibration texts in padded batches of BATCH, in
      their order, against one text at a time (its scales are fixed: a text's vector does not
      depend on the texts beside it);
    - `export`: the float32 file, one text at a time, against PyTorch, on every CHECK_STEP-th
      calibration text (in one padded batch) and on one text of MAX_TOKENS tokens (the graph's
      sequence axis is not fixed at the traced length);
    - `batch`: the float32 file on those texts in one padded batch against one text at a time
      (the graph's pooling honours the mask).

    (A sample for the last two: a pass of the float32 model over every text costs 10 to 20 s
    on two cores.)"""
    few = texts[::CHECK_STEP]
    long_text = " ".join(texts)
    assert len(tokenizer.encode(long_text).ids) == MAX_TOKENS
    ids, mask = padded(tokenizer, few)
    with torch.no_grad():
        reference = np.concatenate(
            [
                module(torch.from_numpy(ids), torch.from_numpy(mask)).numpy(),
                module(*(torch.from_numpy(a) for a in padded(tokenizer, [long_text]))).numpy(),
            ]
        )
    fp32_run = session(fp32)
    alone = embed(fp32_run, tokenizer, [*texts, long_text])
    int8_run = session(int8)
    quantized = embed(int8_run, tokenizer, texts)
    batched = fp32_run.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    in_batches = np.empty_like(quantized)
    for k in range(0, len(texts), BATCH):
        part_ids, part_mask = padded(tokenizer, texts[k : k + BATCH])
        inputs = {"input_ids": part_ids, "attention_mask": part_mask}
        in_batches[k : k + BATCH] = int8_run.run(None, inputs)[0]
    alone_few = np.concatenate([alone[: len(texts)][::CHECK_STEP], alone[-1:]])

    def figures(a: np.ndarray, b: np.ndarray, digits: int = 5) -> dict[str, float]:
        c = cosines(a, b)
        return {"min": round(float(c.min()), digits), "mean": round(float(c.mean()), digits)}

    n = len(texts)
    return {
        "texts": n,
        "int8": figures(quantized, alone[:n]),
        "int8_batch": figures(in_batches, quantized, 6),
        "export": figures(alone_few, reference),
        "batch": figures(batched, alone_few[:-1]),
        "shape": list(quantized.shape),
    }


def main() -> None:
    model_dir, calibration, work = (Path(a) for a in sys.argv[1:4])
    texts = [line for line in calibration.read_text(encoding="utf-8").split("\n") if line]
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    seconds: dict[str, float] = {}

    def step(name: str, started: float) -> None:
        seconds[name] = round(time.perf_counter() - started, 1)
        print(f"build_mpnet: {name} {seconds[name]} s", flush=True)

    fp32, smoothed, int8 = work / "fp32.onnx", work / "smoothed.onnx", work / "int8.onnx"
    started = time.perf_counter()
    module = export(model_dir, fp32)
    step("export", started)
    started = time.perf_counter()
    rescaled = smooth(fp32, smoothed, tokenizer, texts, work)
    step("smooth", started)
    started = time.perf_counter()
    kept_float = quantize(smoothed, int8, tokenizer, texts, work)
    smoothed.unlink()
    embedding_table(int8)
    step("quantize", started)
    started = time.perf_counter()
    figures = check(module, fp32, int8, tokenizer, texts)
    step("check", started)

    versions = {
        name: importlib.metadata.version(name)
        for name in (
            "torch",
            "transformers",
            "onnx",
            "onnxruntime",
            "numpy",
            "tokenizers",
            "safetensors",
        )
    }
    report = {
        "versions": {"python": sys.version.split()[0], **versions},
        "opset": OPSET,
        "alpha": ALPHA,
        "matmuls_rescaled": rescaled,
        "matmuls_float32": kept_float,
        "fidelity": figures,
        "seconds": seconds,
    }
    (work / "report.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
