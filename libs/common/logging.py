"""One structlog set-up for every process: JSON lines (orjson) or console, contextvars bound.

The request id is bound per request (and per consumed message) with
`structlog.contextvars.bind_contextvars(request_id=...)`, so every line carries it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def _dumps(obj: object, default: object = None) -> str:
    return orjson.dumps(obj, default=default).decode()  # type: ignore[arg-type]


def configure_logging(fmt: str = "json", level: str = "info", process: str | None = None) -> None:
    """Configure structlog and route stdlib logging (aiohttp, aio-pika) through it."""
    lvl = _LEVELS.get(level, logging.INFO)
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if process:
        shared.insert(0, _add_process(process))
    renderer: structlog.types.Processor
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    else:
        renderer = structlog.processors.JSONRenderer(serializer=_dumps)
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(lvl, logging.WARNING))  # library chatter only from warnings up
    logging.getLogger("aiohttp.access").disabled = True  # our canonical line replaces it


def _add_process(name: str) -> structlog.types.Processor:
    def add(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event.setdefault("process", name)
        return event

    return add


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)
