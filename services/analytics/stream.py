"""Streaming an export: a server-side cursor read in batches, each batch written as it comes.

Memory stays flat in the number of rows: at most one batch of rows is held at a time. The
first batch is fetched before the response starts, so a failing query still answers with the
error envelope; after that a failure can only cut the stream short.
"""

from __future__ import annotations

import contextlib

import csv
import io
from datetime import datetime, timezone
from typing import Any

import aiopg
import orjson
from aiohttp import web

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from libs.api.analytics.schemas import ExportQuery

from .exports import Export

BATCH = 500
FORMATS = ["application/json", "text/csv"]  # in order of preference on a tie
# Characters that make a spreadsheet read a cell as a formula (CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def guard(text: str) -> str:
    """A text cell a spreadsheet would run as a formula gets a leading `'`."""
    return "'" + text if text.startswith(FORMULA_START) else text


def cell(value: Any) -> Any:
    """One CSV cell of a value of the record's JSON: guarded, booleans as JSON words, null
    empty; date-times are the JSON's strings, so they are in the one form.

    The guard applies to every cell, numbers included: the contract names the cell's first
    character, not its type, so a negative number is written as `'-5` (docs/analytics.md).
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return guard(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return guard(str(value))


def csv_chunk(rows: list[list[Any]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerows([cell(v) for v in row] for row in rows)
    return buf.getvalue().encode("utf-8")


def choose_format(request: web.Request, q: ExportQuery) -> tuple[str, bool]:
    """The export's format, and whether the Accept header chose it (CONTRACT 9): `format` when
    given; else `text/csv` or `application/json` by Accept (quality values and wildcards
    count; JSON on a tie and when Accept names neither)."""
    if "format" in q.model_fields_set:
        return q.format, False
    accept = parse_accept_header(request.headers.get("Accept", ""), MIMEAccept)
    return ("csv" if accept.best_match(FORMATS) == "text/csv" else "json"), True


def headers(kind: str, fmt: str, negotiated: bool = False) -> dict[str, str]:
    today = datetime.now(timezone.utc).date().isoformat()
    ctype = "text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    out = {"Content-Type": ctype,
           "Content-Disposition": f'attachment; filename="{kind}-{today}.{fmt}"',
           "Cache-Control": "no-store"}
    if negotiated:
        out["Vary"] = "Accept"
    return out


def record(row: tuple[str, str | None]) -> str:
    """The JSON text of a row's record: its own members, then the extra ones (both compact)."""
    text, extra = row
    return text if extra is None else text[:-1] + "," + extra[1:]


class Encoder:
    """Turns batches of rows into bytes of one format, opening and closing the document."""

    def __init__(self, export: Export, fmt: str) -> None:
        self.export, self.fmt, self.first = export, fmt, True

    def opening(self) -> bytes:
        return csv_chunk([list(self.export.columns)]) if self.fmt == "csv" else b"["

    def closing(self) -> bytes:
        return b"" if self.fmt == "csv" else b"]"

    def batch(self, rows: list[tuple[Any, ...]]) -> bytes:
        texts = [record(r) for r in rows]
        if self.fmt == "csv":
            return csv_chunk([self.export.cells(orjson.loads(t)) for t in texts])
        body = ",".join(texts).encode()
        if not self.first:
            body = b"," + body
        self.first = False
        return body


async def stream_export(request: web.Request, pool: aiopg.Pool, export: Export,
                        q: ExportQuery) -> web.StreamResponse:
    fmt, negotiated = choose_format(request, q)
    enc = Encoder(export, fmt)
    async with pool.acquire() as conn, conn.cursor() as cur:
        # A cursor that outlives one statement needs a transaction (aiopg is autocommit).
        await cur.execute("BEGIN READ ONLY")
        try:
            await cur.execute(f"DECLARE export_rows NO SCROLL CURSOR FOR {export.sql}",
                              export.params)
            rows = await _fetch(cur)
            resp = web.StreamResponse(headers=headers(export.kind, fmt, negotiated))
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            await resp.write(enc.opening())
            while rows:
                await resp.write(enc.batch(rows))
                rows = await _fetch(cur) if len(rows) == BATCH else []
            await resp.write(enc.closing())
        finally:
            with contextlib.suppress(Exception):  # never mask the original error
                await cur.execute("ROLLBACK")
    await resp.write_eof()
    return resp


async def _fetch(cur: aiopg.Cursor) -> list[tuple[Any, ...]]:
    await cur.execute(f"FETCH {BATCH} FROM export_rows")
    return list(await cur.fetchall())
