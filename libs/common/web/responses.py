"""JSON answers: the success envelope and the error envelope."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..caller import H_REQUEST_ID
from ..errors import ApiError
from ..render import dumps


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=dumps(data), status=status, headers=headers, content_type="application/json"
    )


def data_response(data: Any, status: int = 200) -> web.Response:
    """The spec's success envelope: `{"data": ...}`."""
    return json_response({"data": data}, status=status)


def error_response(err: ApiError, request_id: str | None = None) -> web.Response:
    headers = dict(err.headers)
    if request_id:
        headers[H_REQUEST_ID] = request_id
    return json_response(err.body(), status=err.status, headers=headers)
