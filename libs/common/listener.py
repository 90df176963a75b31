"""The HTTP listeners of every process: time limits on connections, and a neutral Server header.

aiohttp closes a connection that sits idle between requests after `keepalive_timeout` (its
default is an hour), but it has no limit on how long a client may take to send a request's
head: a client sending one header line now and then holds a connection, and a handler slot,
for as long as it likes. `Runner` serves with both limits:

- `HTTP_KEEPALIVE_TIMEOUT_S` (75 s): an idle kept-alive connection is closed.
- `HTTP_HEADER_TIMEOUT_S` (10 s): from the first byte of a request to the end of its head;
  past it the connection is closed without an answer (the client is not reading one anyway).

Every answer says `Server: ims` rather than the server software and its version, including the
400 that aiohttp writes itself for a request its parser refuses.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

SERVER = "ims"


class HeadDeadlineHandler(web.RequestHandler):
    """aiohttp's connection handler, plus a deadline on reading each request's head.

    The clock starts when bytes arrive while the handler waits for a request, and stops when
    the parser has a whole head (the waiter is woken). Bytes arriving while a request is being
    handled (its body, a pipelined request) start nothing: the keep-alive timer still bounds a
    connection that then goes quiet.
    """

    __slots__ = ("_head_timeout", "_head_timer")

    def __init__(self, manager: web.Server, *, head_timeout: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._head_timeout = head_timeout
        self._head_timer: asyncio.TimerHandle | None = None

    def _awaiting_head(self) -> bool:
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def data_received(self, data: bytes) -> None:
        idle = self._awaiting_head()
        super().data_received(data)
        if not self._awaiting_head():
            self._stop_head_clock()
        elif idle and data and self._head_timer is None:
            self._head_timer = self._loop.call_later(self._head_timeout, self._head_expired)

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._awaiting_head():
            self.force_close()

    def _stop_head_clock(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def close_after_answer(self) -> None:
        """Close the connection once the current answer is out, without reading the rest of
        the request's body first (aiohttp reads an unread body for up to 10 s after the
        answer, to close cleanly: a client trickling its body would hold it all that time)."""
        self._lingering_time = 0.0

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_head_clock()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # aiohttp's own answers (a request its parser refused) bypass the app's signals.
        response = super().handle_error(request, status, exc, message)
        response.headers["Server"] = SERVER
        return response


def close_after_answer(request: web.BaseRequest) -> None:
    """The request's connection closes once its answer is out (`HeadDeadlineHandler`)."""
    protocol = request.protocol
    if isinstance(protocol, HeadDeadlineHandler):
        protocol.close_after_answer()


class _Server(web.Server):
    def __init__(self, *args: Any, head_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout = head_timeout

    def __call__(self) -> web.RequestHandler:
        return HeadDeadlineHandler(
            self, loop=self._loop, head_timeout=self.head_timeout, **self._kwargs
        )


class Runner(web.AppRunner):
    """An AppRunner whose connections have both time limits and whose answers say `Server: ims`."""

    def __init__(
        self, app: web.Application, *, keepalive_timeout: float, head_timeout: float, **kwargs: Any
    ) -> None:
        super().__init__(app, keepalive_timeout=keepalive_timeout, **kwargs)
        self._head_timeout = head_timeout
        app.on_response_prepare.append(_neutral_server)

    async def _make_server(self) -> web.Server:
        base = await super()._make_server()
        return _Server(
            base.request_handler,
            request_factory=base.request_factory,
            handler_cancellation=base.handler_cancellation,
            loop=asyncio.get_running_loop(),
            head_timeout=self._head_timeout,
            **base._kwargs,
        )


async def _neutral_server(_: web.Request, response: web.StreamResponse) -> None:
    # Runs after aiohttp filled in its default (which names itself and its version).
    response.headers["Server"] = SERVER
