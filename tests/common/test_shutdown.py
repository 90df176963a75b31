"""Processes stop on SIGTERM at any moment, also while they are still starting."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from tests.support.processes import ROOT, WORKERS, System, free_port, module_of


@pytest.mark.parametrize("service", ["webhooks", "ideas", "similar", "similar-embedder"])
async def test_sigterm_during_startup_is_honoured(system: System, service: str) -> None:
    """A SIGTERM sent at several points of start-up ends the process within seconds."""
    env = system.env()
    for delay in (0.6, 0.9, 1.3, 2.0):
        env[WORKERS.get(service, f"{service.upper()}_PORT")] = str(free_port())
        env["AMQP_PREFIX"] = system.amqp_prefix
        proc = subprocess.Popen(
            [sys.executable, "-m", module_of(service)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.to_thread(proc.wait, 15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"{service} ignored SIGTERM sent {delay}s after start")
        # Killed by the signal before Python installed its handlers, or a clean exit after.
        assert code in (0, -signal.SIGTERM), (delay, code)


async def test_retrying_loop_stops_when_cancel_becomes_another_error() -> None:
    """A loop that retries on errors ends when a library turns its cancellation into an error."""
    import asyncio

    from libs.common.tasks import raise_if_cancelled

    rounds = 0

    async def query() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise RuntimeError("cancel failed") from None  # what aiopg may do

    async def loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            try:
                await query()
            except Exception as err:
                raise_if_cancelled(err)

    task = asyncio.create_task(loop())
    await asyncio.sleep(0.01)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2)
    assert task in done and task.cancelled() and rounds == 1
