"""The int8 all-mpnet-base-v2 file's build (services/similar/build_mpnet.py), without running
it: where its files go, when it does nothing, that it imports the standard library alone, that
a fidelity or batch-independence figure short of its bound fails it, and its calibration texts,
which are every tuning idea's texts and nothing else."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from services.similar import build_mpnet
from services.similar.build_mpnet import CALIBRATION, MPNET_ID, mpnet_files, up_to_date
from tests.support.similar_set import DATA, HELD_OUT_IDEAS, calibration_texts, part

ROOT = Path(__file__).resolve().parents[2]


def joins(idea: dict[str, str]) -> set[str]:
    """An idea's two texts: "title: summary" and "title. summary" (the title without one)."""
    if not idea["summary"]:
        return {idea["title"]}
    return {f"{idea['title']}: {idea['summary']}", f"{idea['title']}. {idea['summary']}"}


def test_the_calibration_texts_are_the_tuning_ideas_texts() -> None:
    text = CALIBRATION.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\r" not in text
    lines = text[:-1].split("\n")
    assert lines == calibration_texts()

    tuning = [i for i in DATA["ideas"] if i["key"] not in HELD_OUT_IDEAS]
    held_out = [i for i in DATA["ideas"] if i["key"] in HELD_OUT_IDEAS]
    assert tuning and held_out
    # the ideas the tuning part's paraphrases match are among them
    assert {q["match"] for q in part("tuning").queries} <= {i["key"] for i in tuning}
    assert len(lines) == len(set(lines)) == sum(len(joins(i)) for i in tuning)
    assert set(lines) == set().union(*(joins(i) for i in tuning))
    # nothing else: no held-out idea's text, no paraphrase, no negative
    assert not set(lines) & set().union(*(joins(i) for i in held_out))
    searched = {q["text"] for q in DATA["queries"]} | {n["text"] for n in DATA["negatives"]}
    assert not set(lines) & searched


def test_the_files_go_under_share_ims(tmp_path: Path) -> None:
    assert MPNET_ID == "all-mpnet-base-v2-int8-static-v1"
    share = tmp_path / "share" / "ims"
    assert mpnet_files(tmp_path) == (
        share / "all-mpnet-base-v2-int8-static-v1.onnx",
        share / "all-mpnet-base-v2-tokenizer.json",
    )
    share = Path(sys.prefix) / "share" / "ims"
    assert mpnet_files() == (
        share / "all-mpnet-base-v2-int8-static-v1.onnx",
        share / "all-mpnet-base-v2-tokenizer.json",
    )


def test_nothing_is_built_while_the_manifest_names_the_files(tmp_path: Path) -> None:
    onnx_file, tokenizer = mpnet_files(tmp_path)
    assert not up_to_date(tmp_path)
    onnx_file.parent.mkdir(parents=True)
    onnx_file.write_bytes(b"model")
    tokenizer.write_bytes(b"tokenizer")
    manifest = onnx_file.with_suffix(".json")
    record = {
        "id": MPNET_ID,
        "onnx_sha256": build_mpnet.sha256(onnx_file),
        "tokenizer_sha256": build_mpnet.sha256(tokenizer),
    }
    manifest.write_text(json.dumps(record))
    assert up_to_date(tmp_path)

    manifest.write_text(json.dumps({**record, "id": "all-mpnet-base-v2-int8-smooth-v1"}))
    assert not up_to_date(tmp_path)
    manifest.write_text(json.dumps(record))
    onnx_file.write_bytes(b"another model")
    assert not up_to_date(tmp_path)
    manifest.write_text("not JSON")
    assert not up_to_date(tmp_path)


def test_the_build_module_imports_the_standard_library_alone() -> None:
    """It runs before anything but the project's dependencies is installed, and its export
    script, in another environment, imports nothing of the project."""
    listing = "import sys; print(*sorted(m.split('.')[0] for m in sys.modules))"
    before, after = (
        set(
            subprocess.run(
                [sys.executable, "-c", f"{code}{listing}"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
        )
        for code in ("", "import services.similar.build_mpnet; ")
    )
    assert after - before - {"services"} <= set(sys.stdlib_module_names)
    export = (ROOT / "services" / "similar" / "mpnet_export.py").read_text()
    assert "services" not in {
        line.split()[1].split(".")[0]
        for line in export.splitlines()
        if line.startswith(("import ", "from "))
    }


def test_a_figure_short_of_its_bound_fails_the_build_saying_which() -> None:
    def report(
        int8_mean: float, int8_min: float, export_min: float, int8_batch_min: float = 1.0
    ) -> dict[str, object]:
        return {
            "matmuls_rescaled": 72,
            "matmuls_float32": 24,
            "fidelity": {
                "texts": 176,
                "int8": {"mean": int8_mean, "min": int8_min},
                "int8_batch": {"mean": 1.0, "min": int8_batch_min},
                "export": {"mean": 1.0, "min": export_min},
                "batch": {"mean": 1.0, "min": 1.0},
                "shape": [176, 768],
            },
        }

    build_mpnet.judge(report(0.996, 0.989, 1.0))
    build_mpnet.judge(report(0.996, 0.989, 1.0, 0.9999))
    for figures, says in (
        ((0.97, 0.96, 1.0), "cosine mean 0.97 (at least 0.98)"),
        ((0.99, 0.94, 1.0), "minimum 0.94 (at least 0.95)"),
        ((0.996, 0.989, 0.999), "stray from PyTorch's: minimum cosine 0.999"),
        (
            (0.996, 0.989, 1.0, 0.9998),
            "int8 file's vectors in padded batches stray from one text at a time: minimum "
            "cosine 0.9998 (at least 0.9999)",
        ),
    ):
        with pytest.raises(build_mpnet.BuildFailed, match=re.escape(says)):
            build_mpnet.judge(report(*figures))
