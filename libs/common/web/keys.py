"""The keys of what an app and its requests hold, and the paths every process answers openly."""

from __future__ import annotations

import aiohttp
import aiopg
from aiohttp import web

from ..caller import Caller
from ..messaging import Broker
from ..peers import Peers
from ..settings import Settings

SETTINGS = web.AppKey("settings", Settings)
PG_POOL = web.AppKey("pg_pool", aiopg.Pool)
BROKER = web.AppKey("broker", Broker)
HTTP = web.AppKey("http_session", aiohttp.ClientSession)
PEERS = web.AppKey("peers", Peers)
PROCESS = web.AppKey("process", str)
CALLER = web.RequestKey("caller", Caller)
REQUEST_ID = web.RequestKey("request_id", str)

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
