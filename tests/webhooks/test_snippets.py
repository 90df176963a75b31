"""The receiver snippets of docs/webhooks.md (Python, JavaScript, Go), run as they are printed
against real deliveries signed during a rotation: each accepts them with either secret and
refuses a changed body, another secret and an old timestamp. Node and Go are installed by
`make test` (Debian's nodejs and golang-go) when missing."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import Workspace
from tests.support.processes import ROOT, System
from tests.webhooks.support import Received, Receiver
from tests.webhooks.test_delivery import subscribe
from tests.webhooks.test_self_service import next_delivery, rotate

DOC = ROOT / "docs" / "webhooks.md"
FILES = {"python": "verify.py", "javascript": "verify.js", "go": "verify.go"}


def snippet(language: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, f"one {language} block expected in {DOC}"
    return blocks[0]


def command(language: str, path: Path) -> list[str]:
    tool = {"python": sys.executable, "javascript": shutil.which("node"), "go": shutil.which("go")}[
        language
    ]
    assert tool, f"{language}: its runtime is not installed (make test installs it)"
    return [tool, "run", str(path)] if language == "go" else [tool, str(path)]


def run(
    cmd: list[str],
    secret: str,
    r: Received,
    body: bytes | None = None,
    timestamp: str | None = None,
) -> str:
    env = dict(
        os.environ,
        WEBHOOK_SECRET=secret,
        WEBHOOK_ID=r.headers["webhook-id"],
        WEBHOOK_TIMESTAMP=timestamp or r.headers["webhook-timestamp"],
        WEBHOOK_SIGNATURE=r.headers["webhook-signature"],
        GOCACHE=str(ROOT / ".run" / "go-cache"),
        GO111MODULE="off",
    )
    out = subprocess.run(
        cmd, input=r.body if body is None else body, env=env, capture_output=True, timeout=180
    )
    return out.stdout.decode().strip() or out.stderr.decode()


@pytest.mark.parametrize("language", list(FILES))
async def test_documented_snippet_verifies_real_deliveries(
    language: str, system: System, ws: Workspace, receiver: Receiver, tmp_path: Path
) -> None:
    """valid with the new and the previous secret during a rotation; invalid otherwise."""
    path = receiver.new_path()
    sub = await subscribe(ws.api, receiver.url(path))
    new = (await rotate(ws.api, sub["id"]))["secret"]
    got = await next_delivery(system, ws, receiver, path)
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    source = tmp_path / FILES[language]
    source.write_text(snippet(language))
    cmd = command(language, source)

    def check() -> dict[str, Any]:
        return {
            "new": run(cmd, new, got),
            "old": run(cmd, sub["secret"], got),
            "body": run(cmd, new, got, body=got.body.replace(b"}", b" }", 1)),
            "secret": run(cmd, "whsec_" + "A" * 40, got),
            "stale": run(cmd, new, got, timestamp=str(int(got.headers["webhook-timestamp"]) - 600)),
        }

    results = await asyncio.to_thread(check)
    assert results == {
        "new": "valid",
        "old": "valid",
        "body": "invalid",
        "secret": "invalid",
        "stale": "invalid",
    }, results
