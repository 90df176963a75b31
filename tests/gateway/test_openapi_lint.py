"""The served document passes Redocly CLI's lint at the project's strict rule set, with no error.

The linter is pinned in tools/openapi-lint (package.json, package-lock.json) and installed by
`make test` (`npm ci`); redocly.yaml beside it lists the rules and why any is switched off.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.api import Api

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "openapi-lint"
REDOCLY = TOOLS / "node_modules" / ".bin" / "redocly"


def lint(document: dict[str, object], tmp_path: Path) -> list[dict[str, object]]:
    """Redocly's problems with the document (errors and warnings alike)."""
    assert REDOCLY.exists(), f"{REDOCLY} is missing: `make tools` installs it"
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(document))
    env = {**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"}
    done = subprocess.run(
        [
            str(REDOCLY),
            "lint",
            str(path),
            "--config",
            str(TOOLS / "redocly.yaml"),
            "--format",
            "json",
            "--max-problems",
            "1000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    problems: list[dict[str, object]] = json.loads(done.stdout)["problems"]
    assert done.returncode == (1 if problems else 0), done.stderr
    return problems


async def test_served_document_passes_the_strict_lint(api: Api, tmp_path: Path) -> None:
    """Zero problems: any error or warning fails, with the rule and the place it names."""
    document = (await api.with_key(None).get("/api/v1/openapi.json")).json
    problems = lint(document, tmp_path)
    assert [
        (p["ruleId"], p["location"][0]["pointer"], p["message"])  # type: ignore[index]
        for p in problems
    ] == []


async def test_lint_catches_a_broken_promise(api: Api, tmp_path: Path) -> None:
    """The rule set bites: a title, a body without example, an undescribed parameter."""
    document = (await api.with_key(None).get("/api/v1/openapi.json")).json
    create = document["paths"]["/api/v1/ideas"]["post"]
    del create["requestBody"]["content"]["application/json"]["example"]
    document["components"]["schemas"]["Idea"]["title"] = "Idea"
    document["paths"]["/api/v1/ideas"]["get"]["parameters"][0]["description"] = ""
    rules = {p["ruleId"] for p in lint(document, tmp_path)}
    assert {
        "rule/request-body-example",
        "rule/no-titles",
        "rule/parameter-description-not-empty",
    } <= rules
