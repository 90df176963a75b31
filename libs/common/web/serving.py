"""Serving a process: listeners, SIGTERM and SIGINT, the shutdown budget, uvloop."""

from __future__ import annotations

import asyncio
import gc
import signal
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import Gauge

from ..listener import Runner
from ..settings import Settings
from .app import metrics_app
from .keys import PROCESS, SETTINGS

log = structlog.get_logger("http")

FROZEN = Gauge(
    "ims_gc_frozen_objects",
    "Objects of the process's start-up that the cyclic garbage collector no longer scans",
)


def freeze_startup_objects() -> int:
    """Take what the process allocated to start (modules, the app, its pools and models) out
    of the cyclic garbage collector's scans (`gc.freeze`): a full collection walks every
    tracked object, and over a started service's few hundred thousand it stopped the
    process for 30 to 150 ms, in the middle of whatever requests were in flight
    (docs/performance.md#garbage-collection). Garbage is collected first, so none is kept
    for good. How many objects were frozen."""
    gc.collect()
    gc.freeze()
    count = gc.get_freeze_count()
    FROZEN.set(count)
    return count


def dump_tasks() -> None:
    """Log every asyncio task with its stack (SIGUSR1): what a process that will not stop waits on."""
    for task in asyncio.all_tasks():
        frames: list[str] = []
        coro: Any = task.get_coro()
        while coro is not None and len(frames) < 20:  # follow what each coroutine awaits
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                frames.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        log.warning("task_dump", task=task.get_name(), coro=repr(task.get_coro()), stack=frames)


def runner(app: web.Application, settings: Settings) -> Runner:
    """A listener's runner with the process's shutdown, keep-alive and request-head limits."""
    return Runner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=settings.shutdown_timeout_s,
        keepalive_timeout=settings.http_keepalive_timeout_s,
        head_timeout=settings.http_header_timeout_s,
    )


async def serve(
    app: web.Application, host: str, port: int, metrics_port: int | None = None
) -> None:
    """Start, serve until SIGTERM or SIGINT, then shut down within the configured timeout.

    The signals only set an event, and they are caught from before start-up: a stop asked for
    while the process is still starting is honoured as soon as it has started, never lost.
    With `metrics_port`, `/metrics` is served there, on `SERVICE_HOST`, by a listener of its own.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    settings = app[SETTINGS]
    runners = [runner(app, settings)]
    if metrics_port is not None:
        runners.append(runner(metrics_app(), settings))
    try:
        for each in runners:
            await each.setup()
        await web.TCPSite(runners[0], host, port).start()
        if metrics_port is not None:
            await web.TCPSite(runners[1], settings.service_host, metrics_port).start()
        frozen = freeze_startup_objects()
        log.info(
            "serving",
            process=app[PROCESS],
            host=host,
            port=port,
            metrics_port=metrics_port,
            gc_frozen=frozen,
        )
        await stop.wait()
        log.info("stopping", process=app[PROCESS])
    finally:
        budget = settings.shutdown_timeout_s + 10
        try:
            await asyncio.wait_for(_cleanup(runners), budget)
        except asyncio.TimeoutError:
            dump_tasks()  # say what held the shutdown up, then leave anyway
            log.error("shutdown_timeout", budget_s=budget)
            raise SystemExit(1) from None


async def _cleanup(runners: list[Runner]) -> None:
    for each in runners:  # the main listener first: its requests finish while metrics answer
        await each.cleanup()


def run(app: web.Application, host: str, port: int, metrics_port: int | None = None) -> None:
    """The process's main: uvloop when available, `serve` until told to stop."""
    log.info("starting", process=app[PROCESS], host=host, port=port)
    try:
        import uvloop

        uvloop.run(serve(app, host, port, metrics_port))
    except ImportError:
        asyncio.run(serve(app, host, port, metrics_port))
    log.info("stopped", process=app[PROCESS])
