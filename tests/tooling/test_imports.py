"""The house rules of docs/architecture.md, proved from the import graph.

- `libs/api` (the public API as data) imports only `libs/api`, `libs/common`, pydantic (with
  typing_extensions, its dependency) and the standard library;
- `libs/common` imports no `libs/api` and no service, and names no service (but the peers'
  addresses of its core settings): each service declares its own settings, schema and queue;
- a service imports `libs/` and itself, never another service (the admin CLI `services/ctl`
  may use any service's storage functions);
- the gateway imports only `libs/` and itself;
- each service reads its settings through its own `services/<s>/settings.py`, a subclass of
  the common core;
- no import cycle between the project's modules.

The graph is read from the source with `ast`, so it holds for imports inside functions too.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("libs", "services")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imports_of(name: str, path: Path) -> Iterator[str]:
    """Absolute names of every module `path` imports (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix
            for alias in node.names:
                yield f"{prefix}.{alias.name}"


def graph() -> dict[str, set[str]]:
    modules = project_modules()
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports_of(name, path):
            if imported.split(".")[0] in PACKAGES:
                # `from pkg import module` names a module; `from module import thing` does not
                while imported and imported not in modules:
                    imported = imported.rpartition(".")[0]
                if imported and imported != name:
                    targets.add(imported)
            else:
                targets.add(imported)
        edges[name] = targets
    return edges


def area(module: str) -> str:
    """`libs.api`, `libs.common`, `services.<name>`, or the top-level name of a library."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in PACKAGES and len(parts) > 1 else parts[0]


def violations(edges: dict[str, set[str]]) -> list[str]:
    found = []
    stdlib = sys.stdlib_module_names
    for module, targets in edges.items():
        own = area(module)
        for target in targets:
            other = area(target)
            if other == own or other in ("libs", "services"):
                continue
            if own == "libs.api":
                # typing_extensions: pydantic's own dependency, for Python 3.12's
                # typing.TypeAliasType (the named enums of libs/api/enums.py) on 3.11.
                if not (
                    other in ("libs.common", "pydantic", "typing_extensions") or other in stdlib
                ):
                    found.append(
                        f"{module} -> {target}: libs/api imports only libs/common, "
                        "pydantic and the standard library"
                    )
            elif own == "libs.common":
                if other == "libs.api" or other.startswith("services"):
                    found.append(f"{module} -> {target}: libs/common knows no API and no service")
            elif own == "services.gateway":
                if other.startswith("services."):
                    found.append(f"{module} -> {target}: the gateway imports only libs/")
            elif own.startswith("services.") and own != "services.ctl":
                if other.startswith("services."):
                    found.append(f"{module} -> {target}: a service never imports another")
    return sorted(found)


def cycles(all_edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    edges = {m: {t for t in ts if t in all_edges} for m, ts in all_edges.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_packages_import_downwards_only() -> None:
    assert violations(graph()) == []


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_walk_resolves_every_import_form() -> None:
    """Relative, `from pkg import module` and absolute forms all land on the module imported."""
    edges = graph()
    assert "libs.api.table" in edges["services.gateway.app"]  # absolute
    assert "libs.common.errors" in edges["libs.common.web.middlewares"]  # relative, from ..
    assert "services.ideas.state" in edges["services.ctl.seed"]  # the CLI may use a service


def test_the_rules_catch_each_kind_of_crossing() -> None:
    edges = {
        "services.ideas.views": {"services.customers.store"},
        "services.gateway.app": {"services.ideas.views"},
        "libs.common.web": {"libs.api.table", "services.ideas.views"},
        "libs.api.route": {"aiohttp"},
        "services.ctl.seed": {"services.ideas.state"},
        "libs.api.ideas.routes": {"libs.common.validation", "pydantic", "typing"},
    }
    found = violations(edges)
    assert len(found) == 5, found
    assert not any(f.startswith(("services.ctl", "libs.api.ideas")) for f in found)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


SERVICE_NAMES = {"gateway", "ideas", "customers", "webhooks", "analytics", "mcp"}
# The one place libs/common names services: the peers' addresses every process may call.
NAMES_SERVICES = {"libs.common.settings"}


def test_libs_common_names_no_service() -> None:
    """No string in libs/common is a service's name, but the peers' addresses: queues, schemas
    and migrations are declared by their owners and handed to the common code."""
    found = []
    for name, path in project_modules().items():
        if area(name) != "libs.common" or name in NAMES_SERVICES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in SERVICE_NAMES:
                found.append(f"{name}:{node.lineno}: {node.value!r}")
    assert found == []


def test_each_service_reads_its_own_settings() -> None:
    """Every service process has `services/<s>/settings.py` over the common core, and its
    entry point and app read that, not the core alone."""
    edges = graph()
    for service in sorted(SERVICE_NAMES):
        own = f"services.{service}.settings"
        assert "libs.common.settings" in edges[own], own
        for module in (f"services.{service}.__main__", f"services.{service}.app"):
            assert own in edges[module], f"{module} does not read {own}"
