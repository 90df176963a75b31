"""Every process refuses to start without real shared secrets (docs/api.md).

Each service's entry point runs as a real process with INTERNAL_TOKEN or CURSOR_SECRET unset,
too short or a placeholder: it must exit at once with a status other than 0 and a message
naming the variable, and never print the value it was given."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys

import orjson

from tests.support.processes import ROOT, SERVICES, module_of

BAD = [  # (value or None for unset, words the message must hold)
    (None, "not set"),
    ("s3cr3t-but-only-24-chars", "too short"),
    ("CHANGE_ME-CHANGE_ME-CHANGE_ME-CHANGE_ME", "placeholder"),
    ("dev-internal-token-not-a-secret-at-all", "placeholder"),
]


async def start(service: str, name: str, value: str | None) -> tuple[int, str]:
    env = {
        **os.environ,
        "INTERNAL_TOKEN": secrets.token_urlsafe(32),
        "CURSOR_SECRET": secrets.token_urlsafe(32),
        "LOG_FORMAT": "json",
    }
    if value is None:
        del env[name]
    else:
        env[name] = value
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module_of(service),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(
            f"{service} started with {name}={value!r} instead of refusing"
        ) from None
    return proc.returncode or 0, (out + err).decode()


async def test_every_process_refuses_to_start_without_real_secrets() -> None:
    """Unset, under 32 characters or a placeholder: exit status not 0, the variable named."""
    # Every service's entry point, the variables and the kinds of wrong taken in turns (each
    # kind for each variable is a unit test in test_codecs.py; this proves every process checks).
    names = ("INTERNAL_TOKEN", "CURSOR_SECRET")
    runs = [(svc, (names[n % 2], *BAD[n % len(BAD)])) for n, svc in enumerate(SERVICES)]
    results = await asyncio.gather(*(start(svc, name, value) for svc, (name, value, _) in runs))
    for (svc, (name, value, words)), (code, output) in zip(runs, results, strict=True):
        assert code != 0, (svc, name, output)
        assert name in output and words in output, (svc, name, output)
        assert value is None or value not in output, (svc, "the value was printed")


async def test_the_admin_cli_needs_neither_secret(database_url: str) -> None:
    """`ideasctl` signs and serves nothing: it runs with both secrets unset."""
    env = {k: v for k, v in os.environ.items() if k not in ("INTERNAL_TOKEN", "CURSOR_SECRET")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.ctl",
        "workspace",
        "create",
        "--name",
        "No secrets",
        cwd=ROOT,
        env={**env, "DATABASE_URL": database_url},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    assert orjson.loads(out)["name"] == "No secrets"
