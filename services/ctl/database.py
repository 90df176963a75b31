"""The CLI's one way into the database: a psycopg2 connection whose session is in UTC (as the
services' pools are, libs/common/db.py), closed when the command is done."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg2

from libs.common.settings import Settings


@contextmanager
def connect(settings: Settings) -> Iterator[Any]:
    conn = psycopg2.connect(settings.database_url, options="-c timezone=UTC")
    try:
        yield conn
    finally:
        conn.close()
