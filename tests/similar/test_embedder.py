"""The embedder, a process of its own (`ims-similar-embedder`, docs/similar.md): no process of
the ideas service runs a model; the embedder answers its probes and metrics on
`EMBEDDER_PORT`, keeps new and edited ideas findable by meaning within 2 seconds, takes up the
work again after a restart (the events that waited, the ideas of the copy no event reached, the
rows of another model), and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from tests.support.processes import LOG_DIR, ROOT, free_port
from tests.webhooks.support import (
    PartSystem,
    stop_part_system,
    workspace_api,
)

from .test_similar import I, model_processes, new_idea, similar_part_system, similar_to, until


@dataclass
class External:
    system: PartSystem
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> str:
        return (LOG_DIR / f"{self.system.amqp_prefix}-embedder.log").read_text()

    def start(self) -> None:
        env = {**self.system.env(), "EMBEDDER_PORT": str(self.port)}
        with open(LOG_DIR / f"{self.system.amqp_prefix}-embedder.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "services.similar.embedder"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=15)

    async def status(self, path: str) -> int:
        async with aiohttp.ClientSession() as s:
            try:
                async with s.get(f"http://127.0.0.1:{self.port}{path}") as r:
                    await r.read()
                    return r.status
            except aiohttp.ClientError:
                return 0


@pytest.fixture(scope="module")
async def external() -> AsyncIterator[External]:
    # The system without its embedder: the test runs its own.
    sys_ = await similar_part_system({}, ("gateway", "ideas", "similar"))
    ext = External(sys_, free_port())
    ext.start()

    async def ready() -> bool:
        return await ext.status("/readyz") == 200 and '"embedder_started"' in ext.log

    await until(ready, within=60)
    yield ext
    if ext.proc is not None and ext.proc.poll() is None:
        ext.stop()
    await stop_part_system(sys_)


async def test_the_ideas_process_runs_no_model_and_searches_still_answer(
    external: External, http: Any, openapi: Any
) -> None:
    api = workspace_api(external.system, http, openapi)[1]
    assert await similar_to(api, "Start the search worker") == []
    r = await api.post("/api/v1/automation/ideas", json={"title": "Ask the similar service"})
    assert r.status == 201, r.body  # the meaning rule asked, and found nothing alike
    ideas = external.system.procs["ideas"][0].pid
    # The search worker is the search process's; the ideas process starts no model process.
    assert model_processes(ideas) == {}
    assert "search" in model_processes(external.system.procs["similar"][0].pid)


async def test_probes_and_metrics_answer_on_its_port(external: External) -> None:
    assert await external.status("/healthz") == 200
    assert await external.status("/readyz") == 200
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{external.port}/metrics") as r:
            assert r.status == 200
            assert "# TYPE" in await r.text()
        # Nothing else: the embedder answers no API call, with or without a token.
        async with s.get(f"http://127.0.0.1:{external.port}/api/v1/ideas") as r:
            assert r.status in (401, 404)


async def test_new_and_edited_ideas_are_found_within_2_seconds(
    external: External, http: Any, openapi: Any
) -> None:
    api = workspace_api(external.system, http, openapi)[1]
    idea = await new_idea(api, "Carbon footprint report per shipment")
    started = time.monotonic()

    async def found(query: str) -> bool:
        got = await similar_to(api, query)
        return any(g["idea"]["id"] == idea["id"] for g in got)

    await until(lambda: found("CO2 emissions of each delivery"), within=2)
    assert time.monotonic() - started < 2.5
    r = await api.patch(
        f"{I}/{idea['id']}",
        json={"title": "Invoices in the customer's currency", "summary": "Bill in euros"},
    )
    assert r.status == 200, r.body
    await until(lambda: found("Charge clients in their own money"), within=2)


TITLES = [
    "Recurring invoices on a schedule",
    "Audit log of admin actions",
    "Bulk import of customers from a spreadsheet",
    "Two-factor authentication with an authenticator app",
    "Dark mode for the mobile app",
    "Webhooks for every status change",
    "Custom fields on ideas",
    "Weekly digest e-mail of new ideas",
    "Single sign-on with Okta",
    "Export the roadmap as a PDF",
    "Keyboard shortcuts for the board",
    "Slack notifications for comments",
]


async def late_batches(external: External) -> float:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{external.port}/metrics") as r:
            text = await r.text()
    match = re.search(r"^ims_similar_embed_late_total (\S+)$", text, re.M)
    assert match, "ims_similar_embed_late_total is not among the metrics"
    return float(match.group(1))


async def test_a_busy_machine_does_not_hold_new_ideas_past_2_seconds(
    external: External, http: Any, openapi: Any
) -> None:
    """Processes of normal priority keeping every CPU busy leave the idle-class model thread
    nothing: a batch whose first event has waited `LATE_S` goes to the late thread as well (at
    the priority the embedder was started with), so each new idea's embedding is written within
    2 seconds of its create's answer (docs/similar.md). Measured on the rows: the search
    process, in the idle class too, answers when the machine leaves it the CPU."""
    import psycopg2

    api = workspace_api(external.system, http, openapi)[1]
    before = await late_batches(external)
    spin = [sys.executable, "-c", "while True: pass"]
    hogs = [subprocess.Popen(spin) for _ in range(os.cpu_count() or 2)]
    conn = psycopg2.connect(external.system.database_url)
    conn.autocommit = True
    try:
        await asyncio.sleep(0.5)
        for round_ in range(2):  # a batch of new ideas, twice
            titles = [f"{t} ({round_})" for t in TITLES]
            ideas = await asyncio.gather(*(new_idea(api, t) for t in titles))

            async def embedded(ids: tuple[str, ...] = tuple(i["id"] for i in ideas)) -> bool:
                with conn.cursor() as cur:
                    cur.execute(
                        'SELECT count(*) FROM "similar".embeddings WHERE idea_id = ANY(%s::uuid[])',
                        (list(ids),),
                    )
                    return cur.fetchone()[0] == len(ids)

            await until(embedded, within=2)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        conn.close()
    assert await late_batches(external) > before, "no batch went to the late thread"


async def test_sigterm_stops_it_cleanly_and_a_new_one_catches_up(
    external: External, http: Any, openapi: Any
) -> None:
    """Stopped, it leaves the events in the queue; a new one takes them up, and at start
    embeds the ideas of the copy no event reached (as the backfill of `ideasctl similar
    rebuild` copies them) and the rows another model computed (SIMILAR_MODEL changed): each
    row then carries the current model's hash."""
    import uuid

    import psycopg2

    from services.similar.embedding import DEFAULT_MODEL, STATIC_ID, TRANSFORMERS, idea_text
    from services.similar.index import text_hash

    MODEL_ID = TRANSFORMERS[DEFAULT_MODEL].model_id

    ws, api = workspace_api(external.system, http, openapi)
    older = await new_idea(api, "Export the roadmap as a slide deck")
    await until(lambda: _has_row(external, older["id"], MODEL_ID, older["title"]), within=10)
    assert external.stop() == 0
    assert '"embedder_stopped"' in external.log
    idea = await new_idea(api, "Offline mode on the train")  # while no embedder runs
    by_sql = str(uuid.uuid4())
    conn = psycopg2.connect(external.system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute(  # an idea written by SQL: no event tells of it
            "INSERT INTO ideas.ideas (workspace_id, id, number, title, summary, status,"
            " title_key) VALUES (%s, %s, 9002, 'Gantt chart for project plans',"
            " 'A timeline with dependencies', 'new', 'gantt chart for project plans')",
            (ws, by_sql),
        )
        cur.execute(  # as the backfill (`ideasctl similar rebuild`) copies it
            'INSERT INTO "similar".ideas (workspace_id, idea_id, title, summary, status,'
            " version) VALUES (%s, %s, 'Gantt chart for project plans',"
            " 'A timeline with dependencies', 'new', 0)",
            (ws, by_sql),
        )
        cur.execute(  # as the static model left it
            'UPDATE "similar".embeddings SET text_hash = %s WHERE idea_id = %s',
            (text_hash(STATIC_ID, idea_text(older["title"], None)), older["id"]),
        )
    conn.close()

    async def found(query: str, idea_id: str) -> bool:
        got = await similar_to(api, query)
        return any(g["idea"]["id"] == idea_id for g in got)

    query = "Work without a network connection while travelling"
    await asyncio.sleep(0.5)
    assert not await found(query, idea["id"])
    external.start()
    await until(lambda: found(query, idea["id"]), within=60)  # the event waited in its queue
    await until(lambda: found("Timeline of dependent tasks", by_sql), within=10)
    await until(lambda: _has_row(external, older["id"], MODEL_ID, older["title"]), within=10)
    assert '"embeddings_catch_up_done"' in external.log


async def _has_row(external: External, idea_id: str, model_id: str, text: str) -> bool:
    import psycopg2

    from services.similar.index import text_hash

    conn = psycopg2.connect(external.system.database_url)
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT text_hash FROM "similar".embeddings WHERE idea_id = %s', (idea_id,))
            row = cur.fetchone()
    finally:
        conn.close()
    return row is not None and bytes(row[0]) == text_hash(model_id, text)


def test_a_refused_idle_class_leaves_the_model_process_at_its_nice_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the system refuses the idle scheduling class (a sandbox's syscall filter), a
    model process still starts, at its nice value, instead of failing every search."""
    import os

    from services.similar import embedding

    def refuse(*_: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    niced: list[int] = []
    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    monkeypatch.setattr(os, "nice", niced.append)  # this process's own priority stays
    embedding.place_model_process(10, None, idle=True)
    assert niced == [10]


async def test_a_late_batch_is_embedded_once_but_for_one_piece() -> None:
    """A batch the idle-class model thread has not embedded LATE_S after its first event goes
    to the late thread piece by piece: the piece the idle thread holds is raced, the pieces
    not yet started go to the late thread alone, so the model's work is not doubled when the
    embedder is behind (racing the whole batch doubled it: 30.7 ms of CPU an idea at 50 a
    second, against 11.5 for the model alone). A model stand-in records which thread ran which
    texts; the idle thread is starved (it waits until released)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from services.similar.embedder import LATE_S, PIECE, Batches

    released = threading.Event()
    ran: dict[str, list[str]] = {"idle": [], "late": []}

    class Model:
        dim = 4

        def embed(self, texts: list[str]) -> np.ndarray:
            idle = threading.current_thread().name.startswith("model_")
            ran["idle" if idle else "late"].extend(texts)
            if idle:
                released.wait(30)  # a CPU that other work keeps busy
            return np.array([[float(t.split()[1]), 0, 0, 0] for t in texts], np.float32)

    late_thread = ThreadPoolExecutor(1, "model-late")
    batches = Batches(None, Model(), late_thread)  # type: ignore[arg-type]
    texts = [f"idea {i}" for i in range(2 * PIECE + 5)]
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        vectors = await batches.embed(texts, since=started)
    finally:
        released.set()
        batches.model_thread.shutdown(wait=True)
        late_thread.shutdown(wait=True)
    assert vectors[:, 0].tolist() == [float(i) for i in range(len(texts))]
    assert ran["idle"] == texts[:PIECE], "the idle thread took more than the piece it held"
    assert ran["late"] == texts, "every piece reached the late thread once"
    assert loop.time() - started < LATE_S + 2.0
