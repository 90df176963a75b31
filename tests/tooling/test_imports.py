"""The house rules of docs/architecture.md on the import graph.

The import contracts of pyproject.toml (`[tool.importlinter]`, run by `make lint` as
`lint-imports`) say who may import whom:

- the admin CLI `services/ctl` may use any service; a service never imports another, and every
  package under services/ is named in the contract;
- services over `libs/api` over `libs/common`: `libs/` imports no service, `libs/common` no API;
- `libs/api` imports only `libs/common`, pydantic and the standard library;
- no import cycle.

Here each contract holds on this tree and breaks on a copy of it with one forbidden import
added; and the two rules no contract type says: `libs/common` names no service, and each service
reads its own settings.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONTRACTS = [c["name"] for c in CONFIG["tool"]["importlinter"]["contracts"]]
SERVICES_APART, DOWNWARDS, API_ONLY, NO_CYCLES = CONTRACTS


def lint_imports(root: Path) -> dict[str, str]:
    """Each contract's verdict (KEPT or BROKEN) on the tree at `root`."""
    run = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the names wrap at 80 columns in the summary: join the lines before reading it
    summary = " ".join(run.stdout.split())
    verdicts = {
        name: m.group(1)
        for name in CONTRACTS
        if (m := re.search(re.escape(name) + r" (KEPT|BROKEN)", summary))
    }
    assert len(verdicts) == len(CONTRACTS), run.stdout + run.stderr
    assert (run.returncode == 0) == all(v == "KEPT" for v in verdicts.values()), run.stdout
    return verdicts


def test_the_contracts_hold() -> None:
    assert lint_imports(ROOT) == dict.fromkeys(CONTRACTS, "KEPT")


# (what, the contracts it breaks, files to write: path -> text added at its end). A crossing
# may break a second contract by its consequence: "No import cycles" holds between sibling
# packages too (libs/api and libs/common may not import each other), so an import upwards is a
# cycle as well.
BREAKS = [
    (
        "a service imports another",
        {SERVICES_APART},
        {"services/ideas/views.py": "from services.customers import store as _store\n"},
    ),
    (
        "the gateway imports a service, inside a function",
        {SERVICES_APART},
        {"services/gateway/app.py": "def _f():\n    import services.ideas.store\n"},
    ),
    (
        "a service imports the admin CLI (which imports every service: a cycle too)",
        {SERVICES_APART, NO_CYCLES},
        {"services/webhooks/views.py": "from services.ctl import admin as _admin\n"},
    ),
    (
        "a service the contract does not name",
        {SERVICES_APART},
        {"services/newcomer/__init__.py": '"""A new service."""\n'},
    ),
    (
        "libs/common imports libs/api, relatively (the two packages then import each other)",
        {DOWNWARDS, NO_CYCLES},
        {"libs/common/web/app.py": "from ...api import keys as _keys\n"},
    ),
    (
        "libs/api imports a service (so the services importing libs/api import it too)",
        {DOWNWARDS, SERVICES_APART},
        {"libs/api/route.py": "import services.ideas.ops\n"},
    ),
    (
        "libs/common imports a service (so every other service imports it too)",
        {DOWNWARDS, SERVICES_APART},
        {"libs/common/db.py": "from services.gateway import settings as _settings\n"},
    ),
    (
        "libs/api imports a third-party package other than pydantic",
        {API_ONLY},
        {"libs/api/ideas/schemas.py": "import aiohttp as _aiohttp\n"},
    ),
    (
        "two modules import each other",
        {NO_CYCLES},
        {
            "libs/common/cycle_a.py": "from libs.common import cycle_b as _b\n",
            "libs/common/cycle_b.py": "from libs.common import cycle_a as _a\n",
        },
    ),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packages and the contracts: each case copies it again and breaks it."""
    tree = tmp_path_factory.mktemp("pristine")
    for package in ("libs", "services"):
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tree)
    return tree


@pytest.mark.parametrize(("what", "broken", "files"), BREAKS, ids=[b[0] for b in BREAKS])
def test_each_contract_breaks_on_its_crossing(
    what: str, broken: set[str], files: dict[str, str], pristine: Path, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree)
    for name, text in files.items():
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(text)
    expected = {name: "BROKEN" if name in broken else "KEPT" for name in CONTRACTS}
    assert lint_imports(tree) == expected, what


def test_every_contract_is_proved_breakable() -> None:
    assert set().union(*(b[1] for b in BREAKS)) == set(CONTRACTS)


def test_libs_api_forbids_every_other_runtime_dependency() -> None:
    """The third contract lists what libs/api may not import: every module of the project's
    runtime dependencies but pydantic's. A dependency added to pyproject.toml is added there."""
    declared = {
        re.split(r"[<>=!;\[ ]", d)[0].lower().replace("_", "-")
        for d in CONFIG["project"]["dependencies"]
    }
    shipped = {
        module
        for module, dists in packages_distributions().items()
        if any(d.lower().replace("_", "-") in declared for d in dists)
        and not module.startswith("_")
    }
    # swagger-ui-py ships its own tests as a top-level `test` package
    shipped -= {"pydantic", "test"}
    api_only = next(c for c in CONFIG["tool"]["importlinter"]["contracts"] if c["name"] == API_ONLY)
    assert shipped <= set(api_only["forbidden_modules"])


SERVICE_NAMES = {"gateway", "ideas", "customers", "webhooks", "analytics", "mcp"}
# The one place libs/common names services: the peers' addresses every process may call.
NAMES_SERVICES = {"libs/common/settings.py"}


def test_libs_common_names_no_service() -> None:
    """No string in libs/common is a service's name, but the peers' addresses: queues, schemas
    and migrations are declared by their owners and handed to the common code."""
    found = []
    for path in sorted((ROOT / "libs" / "common").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in NAMES_SERVICES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), name)):
            if isinstance(node, ast.Constant) and node.value in SERVICE_NAMES:
                found.append(f"{name}:{node.lineno}: {node.value!r}")
    assert found == []


def test_each_service_reads_its_own_settings() -> None:
    """Every service process has `services/<s>/settings.py` over the common core, and its
    entry point and app read that, not the core alone."""
    graph = grimp.build_graph("libs", "services", cache_dir=None)
    for service in sorted(SERVICE_NAMES):
        own = f"services.{service}.settings"
        assert graph.direct_import_exists(importer=own, imported="libs.common.settings"), own
        for module in (f"services.{service}.__main__", f"services.{service}.app"):
            assert graph.direct_import_exists(importer=module, imported=own), (
                f"{module} does not read {own}"
            )
