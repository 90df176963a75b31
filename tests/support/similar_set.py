"""The labeled set of similar ideas (tests/data/similar_labeled.json, docs/similar.md) and its
fixed split into a tuning part and a held-out part.

An idea (with its paraphrases) or a request without a duplicate is held out when it is of the
set's second version (`since` 2) and the first byte of the SHA-256 of its `key` is below 176
(0xb0, about 11 in 16 of them); everything else is tuning, among it the whole first version,
on which the model, its parameters and the duplicate threshold had already been chosen. Every
choice of model, parameter or threshold is made on `part("tuning")` alone; the held-out part
only reports.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PATH = Path(__file__).resolve().parents[1] / "data" / "similar_labeled.json"
DATA: dict[str, Any] = json.loads(PATH.read_text())
HELD_OUT_BELOW = 0xB0
PARTS = ("tuning", "held-out")


def held_out(item: dict[str, Any]) -> bool:
    """The split's rule, for an idea or a negative (a paraphrase follows its idea)."""
    return item["since"] == 2 and hashlib.sha256(item["key"].encode()).digest()[0] < HELD_OUT_BELOW


HELD_OUT_IDEAS = frozenset(i["key"] for i in DATA["ideas"] if held_out(i))


@dataclass(frozen=True)
class Part:
    name: str
    queries: list[dict[str, Any]]  # paraphrases: {"match", "voice", "text"}
    negatives: list[dict[str, Any]]  # requests without a duplicate: {"key", "near", "text"}


def part(name: str) -> Part:
    """The paraphrases and negatives of one part. Every part is searched against all the ideas
    (both parts'): the split decides what a figure is reported on, not the workspace."""
    assert name in PARTS, name
    want = name == "held-out"
    return Part(
        name,
        [q for q in DATA["queries"] if (q["match"] in HELD_OUT_IDEAS) == want],
        [n for n in DATA["negatives"] if held_out(n) == want],
    )


CALIBRATION_JOINS = ("{}: {}", "{}. {}")


def calibration_texts() -> list[str]:
    """The texts services/similar/data/mpnet_calibration.txt holds, one a line: the tuning
    part's ideas' texts, every idea joined "title: summary", then every idea joined "title.
    summary" (the title alone without a summary). The int8 all-mpnet-base-v2 file's scales are
    measured on them (services/similar/build_mpnet.py); no paraphrase or negative is among
    them, and nothing of the held-out part."""
    ideas = [i for i in DATA["ideas"] if i["key"] not in HELD_OUT_IDEAS]
    return [
        join.format(i["title"], i["summary"]) if i["summary"] else i["title"]
        for join in CALIBRATION_JOINS
        for i in ideas
    ]
