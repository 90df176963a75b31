"""No benchmark function over 60 lines: a bench is read to trust its figures, and a long
function hides what it measures."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
LIMIT = 60


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [
        f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LIMIT
    ]


def test_no_bench_function_is_over_60_lines() -> None:
    found = [f for p in sorted(BENCH.glob("*.py")) for f in long_functions(p)]
    assert not found, found


def test_the_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    path = tmp_path / "long.py"
    path.write_text(f"def long() -> None:\n{body}\n")
    assert long_functions(path) == [f"long.py:1 long ({LIMIT + 1} lines)"]
