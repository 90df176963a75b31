"""Schema fuzzing: Schemathesis against the live gateway, every check, the served document.

`make test` runs it for FUZZ_BUDGET_S (default 150) seconds with a fixed seed; `make fuzz` runs
it longer with a random one (both printed). A failure prints Schemathesis' report, with a
`curl` line reproducing each failing call; the whole output is kept in .run/fuzz/.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.support.processes import ROOT, System

from .conftest import workspace_in
from .records import Records, seed_records

HERE = Path(__file__).parent
BUDGET_S = int(os.environ.get("FUZZ_BUDGET_S", "150"))
SEED = os.environ.get("FUZZ_SEED", "1124")
OUT = ROOT / ".run" / "fuzz"


def write_config(where: Path, rec: Records) -> Path:
    """The committed config, next to the dictionaries of seeded ids it names."""
    shutil.copy(HERE / "schemathesis.toml", where / "schemathesis.toml")
    shutil.copy(HERE / "baseline.json", where / "baseline.json")
    for name in (
        "ideas",
        "customers",
        "stages",
        "webhooks",
        "hooks",
        "tags",
        "products",
        "members",
        "signals",
        "evidence",
        "tickets",
        "meetings",
        "participants",
        "comments",
        "users",
    ):
        (where / f"{name}.dict").write_text("".join(f'"{v}"\n' for v in getattr(rec, name)))
    return where / "schemathesis.toml"


def failures(output: str) -> str:
    """Schemathesis' report from its FAILURES section on (the progress lines before are noise)."""
    at = output.find("= FAILURES =")
    return output[output.rfind("\n", 0, at) + 1 :] if at >= 0 else output[-20_000:]


@pytest.mark.timeout(BUDGET_S + 240)
async def test_fuzzing_finds_no_failure(
    isolated: System, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    """No server error, no answer outside the document, no check failed, in the whole budget."""
    ws = workspace_in(isolated, http, None)
    config = write_config(tmp_path, await seed_records(isolated, ws))
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / f"schemathesis-{time.strftime('%Y%m%dT%H%M%S')}.txt"
    cmd = [
        sys.executable,
        "-m",
        "tests.security.schemathesis_cli",  # Schemathesis' CLI (see that module for why)
        "--no-color",
        "--config-file",
        str(config),
        "run",
        f"{isolated.base_url}/api/v1/openapi.json",
        "--max-time",
        str(BUDGET_S),
        "--seed",
        SEED,
        "--baseline",
        str(config.parent / "baseline.json"),
        "--report",
        "junit",
        "--report-junit-path",
        str(log.with_suffix(".xml")),
    ]
    env = {**os.environ, "IMS_FUZZ_KEY": ws.key}
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *cmd, cwd=ROOT, env=env, stdout=out, stderr=asyncio.subprocess.STDOUT
        )
        try:
            code = await asyncio.wait_for(proc.wait(), BUDGET_S + 180)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    output = log.read_text(errors="replace")
    print(output[output.find("= SUMMARY =") :])  # operations, phases, test cases: shown with -s
    assert code == 0, f"Schemathesis failed (seed {SEED}, log {log}):\n{failures(output)}"
