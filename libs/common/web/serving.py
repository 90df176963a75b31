"""Serving a process: listeners, SIGTERM and SIGINT, the shutdown budget, uvloop."""

from __future__ import annotations

import asyncio
import gc
import signal
import time
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import Gauge, Histogram

from ..listener import Runner
from ..settings import Settings
from .app import metrics_app
from .keys import PROCESS, SETTINGS

log = structlog.get_logger("http")

FROZEN = Gauge(
    "ims_gc_frozen_objects",
    "Objects of the process's start-up that the cyclic garbage collector no longer scans",
)


LOOP_LAG = Histogram(
    "ims_event_loop_lag_seconds",
    "How late the event loop ran a timer that was due: how long it was kept from its other "
    "work (a callback that ran long, a garbage collection, or the process waiting for a CPU)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
LOOP_WATCH_S = 0.05  # how often the watch looks at the loop


async def watch_loop(blocked_log_s: float, every_s: float = LOOP_WATCH_S) -> None:
    """Measure how late the loop wakes a timer, every `every_s`: each lateness goes into
    `ims_event_loop_lag_seconds`, and one of at least `blocked_log_s` is logged
    (`event_loop_blocked`, with `blocked_ms`): every request in flight meanwhile was held
    that long, whichever hop it was waiting on (docs/running.md#event-loop-lag)."""
    while True:
        due = time.perf_counter() + every_s  # the loop's own clock counts whole milliseconds
        await asyncio.sleep(every_s)
        late = max(0.0, time.perf_counter() - due)
        LOOP_LAG.observe(late)
        if late >= blocked_log_s:
            log.warning("event_loop_blocked", blocked_ms=round(late * 1000, 1))


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
    watch: asyncio.Task[None] | None = None
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
        watch = asyncio.create_task(watch_loop(settings.loop_blocked_log_ms / 1000))
        await stop.wait()
        log.info("stopping", process=app[PROCESS])
    finally:
        if watch is not None:
            watch.cancel()
        budget = settings.shutdown_timeout_s + 10
        try:
            await asyncio.wait_for(_cleanup(runners), budget)
        except TimeoutError:
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
