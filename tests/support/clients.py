"""A Python client generated from the served OpenAPI document with openapi-python-client.

Generated once per test run into a temporary directory under a package name of its own, then
imported from there: what an integrator gets from `openapi-python-client generate`.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = "ims_generated_client"


def generate_client(document: dict[str, Any], workdir: Path) -> ModuleType:
    """Generate the client package into `workdir` and import it."""
    spec = workdir / "openapi.json"
    spec.write_text(json.dumps(document))
    config = workdir / "config.yaml"
    config.write_text("post_hooks: []\n")  # formatting the code is not needed to run it
    tool = Path(sys.executable).with_name("openapi-python-client")
    done = subprocess.run(
        [
            str(tool),
            "generate",
            "--path",
            str(spec),
            "--meta",
            "none",
            "--output-path",
            str(workdir / PACKAGE),
            "--config",
            str(config),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(workdir))
    importlib.invalidate_caches()
    return importlib.import_module(PACKAGE)


def temporary_directory() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="ims-client-")
