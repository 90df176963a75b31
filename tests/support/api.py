"""An API client for tests: talks to the gateway, checks every answer against the OpenAPI document."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import psycopg2

from services.ctl import admin

from .openapi_check import OpenApi


@dataclass
class Resp:
    status: int
    headers: Any
    body: bytes

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def data(self) -> Any:
        return self.json["data"]

    @property
    def error(self) -> dict[str, Any]:
        return self.json["error"]  # type: ignore[no-any-return]


class Api:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        key: str | None,
        openapi: OpenApi | None,
    ) -> None:
        self.session, self.base_url, self.key, self.openapi = session, base_url, key, openapi

    def with_key(self, key: str | None) -> Api:
        return Api(self.session, self.base_url, key, self.openapi)

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        body: bytes | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        check: bool = True,
        base_url: str | None = None,
    ) -> Resp:
        h = dict(headers or {})
        if self.key is not None and "Authorization" not in h:
            h["Authorization"] = f"Bearer {self.key}"
        data = body
        if json is not None:
            data = orjson.dumps(json)
            h.setdefault("Content-Type", "application/json")
        q = {k: _q(v) for k, v in (params or {}).items() if v is not None}
        url = (base_url or self.base_url) + path
        async with self.session.request(method, url, data=data, params=q, headers=h) as r:
            raw = await r.read()
            resp = Resp(r.status, r.headers, raw)
        if check and self.openapi is not None and path.startswith("/api/v1/"):
            parsed = orjson.loads(raw) if r.content_type == "application/json" and raw else None
            self.openapi.check(method, path, r.status, r.content_type, parsed, r.headers)
        return resp

    async def get(self, path: str, **kw: Any) -> Resp:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, json: Any = None, **kw: Any) -> Resp:
        return await self.request("POST", path, json=json, **kw)

    async def patch(self, path: str, json: Any = None, **kw: Any) -> Resp:
        return await self.request("PATCH", path, json=json, **kw)

    async def put(self, path: str, json: Any = None, **kw: Any) -> Resp:
        return await self.request("PUT", path, json=json, **kw)

    async def delete(self, path: str, **kw: Any) -> Resp:
        return await self.request("DELETE", path, **kw)


def _q(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass
class Workspace:
    id: str
    key: str
    key_id: str
    api: Api
    plan: str

    async def new_key(
        self,
        database_url: str,
        scopes: str = "all",
        kind: str = "production",
        name: str = "API key",
    ) -> dict[str, Any]:
        return make_key(database_url, self.id, scopes=scopes, kind=kind, name=name)


def make_workspace(
    database_url: str,
    *,
    name: str | None = None,
    plan: str = "enterprise",
    rate_limit: int | None = 100_000,
    inbox_mode: str = "direct",
) -> dict[str, Any]:
    conn = psycopg2.connect(database_url)
    try:
        return admin.create_workspace(
            conn, name or f"ws-{uuid.uuid4().hex[:8]}", plan, rate_limit, inbox_mode
        )
    finally:
        conn.close()


def make_key(
    database_url: str,
    workspace_id: str,
    *,
    scopes: str = "all",
    kind: str = "production",
    name: str = "API key",
) -> dict[str, Any]:
    conn = psycopg2.connect(database_url)
    try:
        return admin.create_key(conn, workspace_id, name, scopes, kind)
    finally:
        conn.close()
