"""Commands that services contribute to `ideasctl` (seed, demo, projection rebuilds).

Each contributing module (`services.<svc>.cli`) offers `add_parsers(subparsers)` and
`run(args, settings) -> dict | None` (None: not one of its commands).
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import Any

from libs.common.settings import Settings

_MODULES = ("services.ideas.cli", "services.customers.cli")


def _modules() -> list[ModuleType]:
    found = []
    for name in _MODULES:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as err:
            if err.name != name:
                raise
    return found


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for module in _modules():
        if hasattr(module, "add_parsers"):
            module.add_parsers(sub)


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    for module in _modules():
        result = module.run(args, settings)
        if result is not None:
            return result  # type: ignore[no-any-return]
    raise SystemExit(f"ideasctl: '{args.command}' is not available in this build")
