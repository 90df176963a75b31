"""Schemathesis' command line, with `ast.parse` taken by one thread at a time.

Schemathesis runs its workers in threads (`workers` in schemathesis.toml), and Hypothesis names
a filtered strategy's lambda by parsing the source of the module that holds it. CPython 3.11
keeps the AST builder's recursion counter in interpreter-wide state, so two threads parsing at
once can corrupt it, and one of them fails with "SystemError: AST constructor recursion depth
mismatch (before=.., after=..)" (CPython gh-106905), which ends the run with a runtime error that
says nothing about the API. A lock around `ast.parse` takes the race away; nothing else changes.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_parse = ast.parse
_lock = threading.RLock()


def _serialized_parse(*args: Any, **kwargs: Any) -> Any:
    with _lock:
        return _parse(*args, **kwargs)


ast.parse = _serialized_parse  # type: ignore[assignment]

if __name__ == "__main__":
    import schemathesis.cli

    schemathesis.cli.schemathesis()
