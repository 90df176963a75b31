"""The similar benches' markdown is a function of their JSON: each writes both files at once
(`write_results`), so the stored .md must be what the writer makes of the stored .json. Holds
the report writers to their figures when they are reshaped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import similar, similar_models

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


@pytest.mark.parametrize(
    ("area", "markdown"),
    [("similar", similar.markdown), ("similar_models", similar_models.markdown)],
)
def test_the_stored_report_is_the_writers_rendering_of_the_stored_figures(
    area: str, markdown: Callable[[dict[str, Any]], str]
) -> None:
    figures = json.loads((RESULTS / f"{area}.json").read_text())
    assert markdown(figures).rstrip("\n") == (RESULTS / f"{area}.md").read_text().rstrip("\n")
