"""Streaming an export: a server-side cursor read in batches, each batch written as it comes.

Memory stays flat in the number of rows: at most one batch of rows is held at a time. The
first batch is fetched before the response starts, so a failing query still answers with the
error envelope; after that a failure can only cut the stream short.

An export holds a pooled connection and an open transaction while its client reads, so it is
bounded three ways (docs/analytics.md): a slot (`slots.py`), an overall deadline
(`EXPORT_DEADLINE_S`), and a write timeout per 64 KiB (`EXPORT_WRITE_TIMEOUT_S`) that cuts off a
client reading a byte at a time. A cut-off resets the client's connection and gives the
connection back to the pool (rolled back, or closed if a statement was interrupted).
"""

from __future__ import annotations

import asyncio
import csv
import io
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiopg
import orjson
import structlog
from aiohttp import web
from prometheus_client import Counter
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from libs.api.analytics.schemas import ExportQuery
from libs.common.errors import ServiceUnavailable
from libs.common.streaming import bound_send_buffer, cut_off, write_within

from .exports import Export

log = structlog.get_logger("export")
CUT_OFF = Counter("ims_exports_cut_off_total", "Exports cut off before their end", ["reason"])

BATCH = 500
FORMATS = ["application/json", "text/csv"]  # in order of preference on a tie
# Characters that make a spreadsheet read a cell as a formula (CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def guard(text: str) -> str:
    """A text cell a spreadsheet would run as a formula gets a leading `'`."""
    return "'" + text if text.startswith(FORMULA_START) else text


def cell(value: Any) -> Any:
    """One CSV cell: text guarded, numbers and booleans as they are, null empty; date-times are
    the JSON's strings, so they are in the one form.

    Only text is guarded: a number is written as it is (`-1` stays `-1`, docs/analytics.md),
    so a spreadsheet reads it back as the number it is (docs/analytics.md).
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return guard(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return guard(str(value))


def csv_chunk(rows: list[list[Any]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerows([cell(v) for v in row] for row in rows)
    return buf.getvalue().encode("utf-8")


def choose_format(request: web.Request, q: ExportQuery) -> tuple[str, bool]:
    """The export's format, and whether the Accept header chose it (docs/analytics.md): `format` when
    given; else `text/csv` or `application/json` by Accept (quality values and wildcards
    count; JSON on a tie and when Accept names neither)."""
    if "format" in q.model_fields_set:
        return q.format, False
    accept = parse_accept_header(request.headers.get("Accept", ""), MIMEAccept)
    return ("csv" if accept.best_match(FORMATS) == "text/csv" else "json"), True


def headers(kind: str, fmt: str, negotiated: bool = False) -> dict[str, str]:
    today = datetime.now(UTC).date().isoformat()
    ctype = "text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    out = {
        "Content-Type": ctype,
        "Content-Disposition": f'attachment; filename="{kind}-{today}.{fmt}"',
        "Cache-Control": "no-store",
    }
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


@dataclass(frozen=True)
class Bounds:
    deadline_s: float  # the whole export, from its first query to its last byte
    write_timeout_s: float  # each 64 KiB written to the client


async def stream_export(
    request: web.Request, pool: aiopg.Pool, export: Export, q: ExportQuery, bounds: Bounds
) -> web.StreamResponse:
    fmt, negotiated = choose_format(request, q)
    resp = web.StreamResponse(headers=headers(export.kind, fmt, negotiated))
    resp.enable_chunked_encoding()
    deadline = asyncio.timeout(bounds.deadline_s)
    try:
        async with deadline, pool.acquire() as conn, conn.cursor() as cur:
            # A cursor that outlives one statement needs a transaction (aiopg is autocommit).
            await cur.execute("BEGIN READ ONLY")
            try:
                await _stream(request, resp, cur, Encoder(export, fmt), bounds.write_timeout_s)
            finally:
                await _end(conn, cur)
    except TimeoutError:
        reason = "deadline" if deadline.expired() else "write_timeout"
        if not resp.prepared:  # nothing sent yet: the client can still get an answer
            raise ServiceUnavailable(
                "The export did not start in time; retry shortly", headers={"Retry-After": "5"}
            ) from None
        CUT_OFF.labels(reason).inc()
        log.warning("export_cut_off", reason=reason, kind=export.kind, format=fmt)
        cut_off(request)
        return resp
    except ConnectionError:  # the client went away; its connection is gone already
        log.info("export_client_gone", kind=export.kind, format=fmt)
        return resp
    except Exception:
        if not resp.prepared:
            raise  # still time for the error envelope
        # Half an export is out: no error answer can follow it. Logged once, then the client
        # sees a broken transfer, never a complete-looking one.
        log.exception("export_failed", kind=export.kind, format=fmt)
        CUT_OFF.labels("error").inc()
        cut_off(request)
        return resp
    await resp.write_eof()
    return resp


async def _stream(
    request: web.Request,
    resp: web.StreamResponse,
    cur: aiopg.Cursor,
    enc: Encoder,
    write_timeout_s: float,
) -> None:
    export = enc.export
    await cur.execute(f"DECLARE export_rows NO SCROLL CURSOR FOR {export.sql}", export.params)
    rows = await _fetch(cur)
    await resp.prepare(request)
    bound_send_buffer(request)
    await write_within(resp, enc.opening(), write_timeout_s)
    while rows:
        await write_within(resp, enc.batch(rows), write_timeout_s)
        rows = await _fetch(cur) if len(rows) == BATCH else []
    await write_within(resp, enc.closing(), write_timeout_s)


async def _end(conn: aiopg.Connection, cur: aiopg.Cursor) -> None:
    """Roll back; a connection that cannot (a statement was interrupted) is closed, and the
    pool drops it rather than lend it again mid-transaction."""
    try:
        await cur.execute("ROLLBACK")
    except Exception:  # never mask the original error
        conn.close()


async def _fetch(cur: aiopg.Cursor) -> list[tuple[Any, ...]]:
    await cur.execute(f"FETCH {BATCH} FROM export_rows")
    return list(await cur.fetchall())
