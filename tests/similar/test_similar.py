"""Similar ideas by meaning through the gateway (docs/similar.md): found within 2 s of a create
or an edit, left out when deleted or merged, never the idea itself, validation and isolation;
the similar service's processes (`ims-similar`, `ims-similar-embedder`) and their model
processes. The whole system runs the default model, the transformer (`minilm`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.support.api import Api, Workspace
from tests.support.openapi_check import OpenApi

I = "/api/v1/ideas"


async def new_idea(api: Api, title: str, summary: str | None = None) -> dict[str, Any]:
    r = await api.post(I, json={"title": title, "summary": summary})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def similar_to(api: Api, text: str, **kw: Any) -> list[dict[str, Any]]:
    r = await api.post(f"{I}/similar", json={"title": text, **kw})
    assert r.status == 200, r.body
    return r.data  # type: ignore[no-any-return]


async def until(check: Any, within: float = 2.0) -> float:
    """Seconds until `check()` is true; fails after `within`."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not await check():
        assert loop.time() - start < within, "not within the time allowed"
        await asyncio.sleep(0.05)
    return loop.time() - start


async def test_created_idea_is_found_by_meaning_within_2_seconds(
    api: Api, openapi: OpenApi
) -> None:
    await new_idea(api, "Kanban board view", "Drag cards between status columns")
    await new_idea(api, "Annual billing with a discount")
    dark = await new_idea(api, "Dark mode for the dashboard", "A dark colour scheme")

    async def found() -> bool:
        out = await similar_to(api, "Night theme, the white screens hurt my eyes", limit=3)
        return bool(out) and out[0]["idea"]["id"] == dark["id"]

    await until(found)
    out = await similar_to(api, "Night theme, the white screens hurt my eyes", limit=3)
    detail = (await api.get(f"{I}/{dark['id']}")).data
    assert len(out) == 3 and out[0]["idea"] == {k: detail[k] for k in out[0]["idea"]}
    assert list(out[0]["idea"]) == list(openapi.doc["components"]["schemas"]["Idea"]["properties"])
    scores = [o["similarity"] for o in out]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert scores[0] > scores[1] + 0.1
    assert len(await similar_to(api, "Night theme", minSimilarity=0.99)) == 0


async def test_edit_delete_and_merge_follow_within_2_seconds(api: Api) -> None:
    a = await new_idea(api, "Export reports as PDF", "Download reports as PDF files")
    b = await new_idea(api, "Keyboard shortcuts", "Navigate without the mouse")
    c = await new_idea(api, "Printable report documents", "Save analytics as a PDF")

    async def ids(text: str) -> list[str]:
        return [o["idea"]["id"] for o in await similar_to(api, text, limit=10)]

    await until(lambda: _has(ids("Hotkeys for power users"), b["id"]))
    # An edit changes the meaning: found by the new one within 2 s.
    r = await api.patch(
        f"{I}/{b['id']}",
        json={
            "title": "Sign in with a SAML identity provider",
            "summary": "Okta and Azure AD logins",
        },
    )
    assert r.status == 200

    async def new_meaning() -> bool:
        # Above 0.5: the new text's vector, not the old one ranking first among few ideas.
        got = await similar_to(api, "Log in through Okta single sign-on", minSimilarity=0.5)
        return bool(got) and got[0]["idea"]["id"] == b["id"]

    await until(new_meaning)
    # GET /ideas/{id}/similar: never the idea itself.
    r = await api.get(f"{I}/{a['id']}/similar", params={"limit": 5})
    assert r.status == 200 and r.data[0]["idea"]["id"] == c["id"], r.data
    assert a["id"] not in [o["idea"]["id"] for o in r.data]
    # Deleted: left out within 2 s; merged: left out too.
    await api.delete(f"{I}/{c['id']}")
    await until(lambda: _lacks(ids("PDF download of reports"), c["id"]))
    r = await api.get(f"{I}/{a['id']}/similar")
    assert c["id"] not in [o["idea"]["id"] for o in r.data]
    d = await new_idea(api, "Save dashboards as PDF documents")
    await until(lambda: _has(ids("PDF download of reports"), d["id"]))
    assert (await api.post(f"{I}/{d['id']}/merge", json={"intoId": a["id"]})).status == 200
    await until(lambda: _lacks(ids("PDF download of reports"), d["id"]))
    assert (await api.post(f"{I}/{d['id']}/unmerge")).status == 200
    await until(lambda: _has(ids("PDF download of reports"), d["id"]))


async def test_limit_counts_only_ideas_that_may_show(api: Api) -> None:
    """`limit` answers that many eligible ideas, best first, even when the nearest hits in the
    index are ideas deleted or merged a moment ago (the index has not heard yet)."""
    texts = [
        "Dark mode for the dashboard",
        "A dark theme for the web app",
        "Night mode for the reports screen",
        "Dark colours for the admin pages",
    ]
    made = [await new_idea(api, t) for t in texts]
    await new_idea(api, "Annual billing with a discount")

    async def all_found() -> bool:
        got = {o["idea"]["id"] for o in await similar_to(api, "Dark theme please", limit=10)}
        return {m["id"] for m in made} <= got

    await until(all_found)
    best = [o["idea"]["id"] for o in await similar_to(api, "Dark theme please", limit=4)]
    # The two nearest go at once: the index still ranks them first for a moment.
    await api.delete(f"{I}/{best[0]}")
    r = await api.post(f"{I}/{best[1]}/merge", json={"intoId": best[3]})
    assert r.status == 200, r.body
    got = await similar_to(api, "Dark theme please", limit=2)
    assert [o["idea"]["id"] for o in got] == best[2:4]
    assert got[0]["similarity"] >= got[1]["similarity"]


async def test_a_text_asked_again_is_not_embedded_again(
    api: Api, new_workspace: Any, system: Any, http: Any
) -> None:
    """A search text the workspace asked for lately answers from the process's recent texts,
    not the model (`ims_similar_search_texts_total` by source), with the same answer; another
    workspace's same text goes to the model (nothing about one workspace's searches shows in
    another's timings)."""
    import re

    async def counts() -> dict[str, float]:
        async with http.get(system.metrics_url("similar") + "/metrics") as r:
            text = await r.text()
        found = re.findall(r'ims_similar_search_texts_total\{source="(\w+)"\} (\S+)', text)
        return {source: float(n) for source, n in found}

    await new_idea(api, "Dark mode for the dashboard")
    text = f"A night theme for tired eyes {uuid.uuid4()}"
    first = await similar_to(api, text)
    before = await counts()
    again = await similar_to(api, text)
    after = await counts()
    assert after["recent"] - before.get("recent", 0) == 1
    assert after["model"] == before["model"]
    assert [(o["idea"]["id"], o["similarity"]) for o in again] == [
        (o["idea"]["id"], o["similarity"]) for o in first
    ]
    other: Workspace = await new_workspace()
    assert (await other.api.post(f"{I}/similar", json={"title": text})).status == 200
    assert (await counts())["model"] == after["model"] + 1


async def _has(ids: Any, idea_id: str) -> bool:
    return idea_id in await ids


async def _lacks(ids: Any, idea_id: str) -> bool:
    return idea_id not in await ids


async def test_validation_not_found_and_isolation(api: Api, new_workspace: Any) -> None:
    idea = await new_idea(api, "Offline mode", "Work without a connection")
    for params, field in (
        ({"limit": 0}, "limit"),
        ({"limit": 51}, "limit"),
        ({"min_similarity": 1.5}, "min_similarity"),
        ({"min_similarity": "x"}, "min_similarity"),
    ):
        r = await api.get(f"{I}/{idea['id']}/similar", params=params)
        assert (r.status, r.error["code"], r.error.get("field")) == (
            400,
            "validation_error",
            field,
        ), r.body
    for body, field in (
        ({"title": ""}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"title": "x", "summary": "y" * 5001}, "summary"),
        ({"title": "x", "limit": 51}, "limit"),
        ({"title": "x", "minSimilarity": -0.1}, "minSimilarity"),
        ({"title": "x", "other": 1}, "other"),
        ({}, "title"),
    ):
        r = await api.post(f"{I}/similar", json=body)
        assert (r.status, r.error["code"], r.error.get("field")) == (
            400,
            "validation_error",
            field,
        ), r.body
    r = await api.get(f"{I}/{uuid.uuid4()}/similar")
    assert r.status == 404 and r.error["code"] == "not_found"
    other: Workspace = await new_workspace()
    r = await other.api.get(f"{I}/{idea['id']}/similar")
    assert r.status == 404
    # The other workspace's search never sees this workspace's ideas.
    theirs = await new_idea(other.api, "Printing of invoices")
    await until(lambda: _has(_ids(other.api, "Work offline"), theirs["id"]))
    assert idea["id"] not in await _ids(other.api, "Work offline without a connection")
    await until(lambda: _has(_ids(api, "Work offline"), idea["id"]))
    assert theirs["id"] not in await _ids(api, "Printing of invoices")


async def _ids(api: Api, text: str) -> list[str]:
    return [o["idea"]["id"] for o in await similar_to(api, text, limit=50)]


async def test_automation_duplicate_by_meaning(api: Api, system: Any) -> None:
    """Automation POST /ideas: after the url and title rules, an idea at least
    DUPLICATE_SIMILARITY alike in meaning is a duplicate: skipped, with a Signal of the measured
    similarity on the most similar idea; deleted and merged ideas never match."""
    A = "/api/v1/automation/ideas"
    dark = await new_idea(api, "Dark mode for the dashboard", "A dark colour scheme")
    pdf = await new_idea(api, "Export reports as PDF", "Download any report as a PDF file")
    await until(lambda: _has(_ids(api, "PDF export"), pdf["id"]))
    await until(lambda: _has(_ids(api, "Dark theme"), dark["id"]))
    r = await api.post(
        A,
        json={
            "title": "Night theme for the app",
            "summary": "The bright white screens hurt my eyes",
            "source": "slack",
            "authorName": "Ann",
        },
    )
    assert r.status == 200 and r.json == {
        "status": "skipped",
        "reason": "Duplicate idea",
        "id": None,
    }, r.body
    sig = (await api.get(f"{I}/{dark['id']}/signals")).data[0]
    assert sig["platform"] == "slack" and sig["userName"] == "Ann"
    assert 0.5 <= sig["similarity"] < 1.0
    assert sig["content"] == "The bright white screens hurt my eyes"
    assert (await api.get(f"{I}/{dark['id']}")).data["signalCount"] == 1
    # Unrelated: created.
    r = await api.post(A, json={"title": "Recurring tasks every Monday"})
    assert r.status == 201, r.body
    # With a url, meaning does not decide (different urls are different items).
    r = await api.post(A, json={"title": "Night theme for the app", "url": "https://x.io/1"})
    assert r.status == 201, r.body
    # Deleted and merged ideas never match.
    twin = await new_idea(api, "Keyboard shortcuts for power users")
    await until(lambda: _has(_ids(api, "Hotkeys"), twin["id"]))
    await api.delete(f"{I}/{twin['id']}")
    await until(lambda: _lacks(_ids(api, "Hotkeys"), twin["id"]))
    r = await api.post(A, json={"title": "Keyboard shortcuts for power users"})
    assert r.status == 201, r.body  # the deleted twin did not match
    await api.post(f"{I}/{pdf['id']}/merge", json={"intoId": dark["id"]})
    await until(lambda: _lacks(_ids(api, "PDF export"), pdf["id"]))
    r = await api.post(A, json={"title": "Download reports as PDF files"})
    assert r.status == 201, r.body


async def test_rebuild_embeds_ideas_written_by_sql(api: Api, ws: Workspace, system: Any) -> None:
    """`ideasctl similar rebuild`: ideas written by SQL (no events) become searchable; a restart
    would reload these rows, not recompute them."""
    import json
    import subprocess
    import sys

    import psycopg2

    from tests.support.processes import ROOT

    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO ideas.ideas (workspace_id, id, number, title, summary, status,"
            " title_key) VALUES (%s, %s, 9001, 'Gantt chart for project plans',"
            " 'A timeline with dependencies', 'new', 'gantt chart for project plans')",
            (ws.id, str(uuid.uuid4())),
        )
    conn.close()
    assert not await similar_to(api, "Timeline of dependent tasks")
    out = subprocess.run(
        [sys.executable, "-m", "services.ctl", "similar", "rebuild", "--workspace", ws.id],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**system.env()},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["embedded"] == 1

    async def found() -> bool:
        got = await similar_to(api, "Timeline of dependent tasks")
        return bool(got) and got[0]["idea"]["title"] == "Gantt chart for project plans"

    await until(found)


PART = ("gateway", "ideas", "similar", "similar-embedder")


async def similar_part_system(env: dict[str, str], services: tuple[str, ...] = PART) -> Any:
    """A part system (gateway, ideas and the similar service's two processes) with `env`, once
    its embedder consumes: the embedder answers its probes before it has loaded its model
    (seconds on a busy machine), and the 2-second freshness holds from then on."""
    from tests.support.processes import LOG_DIR
    from tests.webhooks.support import start_part_system

    sys_ = await start_part_system(env, services)
    if "similar-embedder" not in services:
        return sys_
    log = LOG_DIR / f"{sys_.amqp_prefix}-similar-embedder-0.log"

    async def embedder_consuming() -> bool:
        return '"embedder_started"' in log.read_text()

    await until(embedder_consuming, within=60)
    return sys_


async def children_end_with_a_killed_process(
    system: Any, api: Api, process: str, expected: set[str]
) -> None:
    """SIGKILL leaves a process (`similar`: the transformer's search worker) no time to stop
    its model processes (`expected` of `model_processes`): they notice it is gone and exit,
    with any helper multiprocessing started. The process is started again (for the module's
    clean stop)."""
    import os
    import signal
    from pathlib import Path

    await similar_to(api, "Start the model processes")
    parent = system.procs[process][0].pid

    async def started() -> bool:
        return expected <= set(model_processes(parent))

    await until(started, within=30)
    children = children_of(parent)
    os.kill(parent, signal.SIGKILL)
    system.procs[process][0].wait()

    def alive(pid: int) -> bool:
        status = Path(f"/proc/{pid}/status")
        return status.exists() and "\nState:\tZ" not in status.read_text()

    async def all_gone() -> bool:
        return not any(alive(c) for c in children)

    # The search texts' workers run in the idle scheduling class: on a machine whose two CPUs
    # are busy they get none until a CPU falls idle, so noticing the parent is gone can take
    # seconds there (it failed at 5 s beside another test run).
    await until(all_gone, within=15)
    system.start_one(process, 0)
    await system.wait_ready()


def children_of(pid: int) -> list[int]:
    from pathlib import Path

    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def model_processes(pid: int) -> dict[str, int]:
    """A process's children that run the model: the transformer's worker (a multiprocessing
    `spawn` child: the search process's, for search texts and the automation rule's), or an
    embedder (a process of its own, which no process should start as its child)."""
    from pathlib import Path

    found = {}
    for child in children_of(pid):
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in cmdline:
            found["search"] = child
        elif b"embedder" in cmdline:
            found["embedder"] = child
    return found


async def test_the_model_runs_below_the_requests_and_a_new_embedder_catches_up(
    api: Api, system: Any
) -> None:
    """The transformer (the default) runs outside every process that answers a request: search
    texts in the search process's worker, in the idle scheduling class SIMILAR_EMBED_NICE
    (default 10) below it; new ideas in the embedder, a process of its own that runs
    SIMILAR_EMBED_NICE below the priority it was started with and, where it may use two CPUs or
    more, on the last of them alone (SIMILAR_EMBED_CPU, default last). No process of the ideas
    service runs a model. Killed, the embedder is started again (by `make run`'s supervisor,
    by Kubernetes; here by the test) and the new one embeds the ideas whose events waited."""
    import os
    import signal

    assert await similar_to(api, "Warm the model") is not None
    searcher = system.procs["similar"][0].pid

    async def worker() -> bool:
        return "search" in model_processes(searcher)

    await until(worker, within=30)
    assert set(model_processes(searcher)) == {"search"}, "the search process's transformer"
    pid = model_processes(searcher)["search"]
    assert os.sched_getscheduler(pid) == os.SCHED_IDLE
    base = os.getpriority(os.PRIO_PROCESS, searcher)
    assert os.getpriority(os.PRIO_PROCESS, pid) - base == min(base + 10, 19) - base
    ideas = system.procs["ideas"][0].pid
    assert model_processes(ideas) == {}, "the ideas process runs no model"
    embedder = system.procs["similar-embedder"][0].pid
    base = os.getpriority(os.PRIO_PROCESS, ideas)  # both started at the test's priority
    assert os.getpriority(os.PRIO_PROCESS, embedder) - base == min(base + 10, 19) - base
    allowed = os.sched_getaffinity(ideas)
    assert os.sched_getaffinity(embedder) == ({max(allowed)} if len(allowed) > 1 else allowed)
    assert os.sched_getscheduler(embedder) == os.SCHED_OTHER, "its event loop's thread"
    os.kill(embedder, signal.SIGKILL)
    system.procs["similar-embedder"][0].wait()
    idea = await new_idea(api, "Carbon footprint report per shipment")

    async def found() -> bool:
        got = await similar_to(api, "CO2 emissions of each delivery")
        return any(g["idea"]["id"] == idea["id"] for g in got)

    await asyncio.sleep(0.5)
    assert not await found(), "embedded with no embedder running"
    system.start_one("similar-embedder", 0)
    await system.wait_ready()
    await until(found, within=60)  # the new one loads the model, then takes up the queue


def test_texts_embedded_together_equal_texts_embedded_alone() -> None:
    """The model runs a call's texts in chunks of like length, each padded to its longest
    (embedding.chunks): every text gets the vector it gets alone, in its own place."""
    import numpy as np

    from services.similar.embedding import CHUNK, Embedder

    long = "Our support team answers tickets about invoices all day long. " * 30
    texts = [f"Idea number {i}" + " with more words" * (i % 7) for i in range(CHUNK + 5)]
    texts[3] = long  # one long text in the first chunk's place, sorted to the last chunk
    embedder = Embedder(1)
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert together.shape == (len(texts), 384)
    assert np.abs(together - alone).max() < 1e-4


def test_a_model_call_holds_at_most_call_tokens() -> None:
    """Long texts go through the model a few at a time: a call's padded tokens stay within
    CALL_TOKENS (or it is one text), so 64 long summaries never hold a gigabyte of attention;
    every text is in exactly one call."""
    from services.similar.embedding import CALL_TOKENS, CHUNK, chunks

    lengths = [384] * 64 + [12] * 200 + [200] * 30 + [1, 2, 3]
    parts = chunks(lengths)
    assert sorted(i for part in parts for i in part) == list(range(len(lengths)))
    for part in parts:
        assert len(part) <= CHUNK
        assert len(part) == 1 or len(part) * max(lengths[i] for i in part) <= CALL_TOKENS
    assert sum(1 for part in parts if lengths[part[0]] == 384) == -(-64 // (CALL_TOKENS // 384))


def test_the_int8_mpnet_embeds_a_text_alike_alone_and_beside_others() -> None:
    """The int8 all-mpnet-base-v2 quantizes its activations at fixed scales (its build
    calibrates them), so texts go through it in padded batches and each gets the vector it
    gets alone, 768 wide; with scales taken per call, a text's vector moved with its batch
    (cosine 0.90 at worst)."""
    import numpy as np

    from services.similar.embedding import MPNET, Embedder

    texts = ["Dark mode", "Export every report as a PDF with our logo " * 8, "SSO with Okta"]
    texts += [f"Idea number {i}" + " with more words" * (i % 7) for i in range(20)]
    embedder = Embedder(1, MPNET)
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert together.shape == (len(texts), 768)
    assert np.abs(together - alone).max() < 1e-4
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-4)


async def test_search_texts_waiting_together_get_their_own_vectors() -> None:
    """The search worker runs the texts that wait together through the model together: each
    caller gets its own text's vector, the one the model gives it alone."""
    import numpy as np

    from services.similar.embedding import Embedder, EmbedPool

    texts = [f"Request {i}: " + "export the invoices as PDF " * (i % 5) for i in range(24)]
    model = Embedder(1)
    alone = model.embed(texts[:1])
    pool = EmbedPool(1, 0)
    try:
        await pool.warm()
        got = await asyncio.gather(*(pool.embed([t]) for t in texts))
        again = await pool.embed(texts[:1])
    finally:
        pool.close()
    expected = np.concatenate([model.embed([t]) for t in texts])
    assert np.abs(np.concatenate(got) - expected).max() < 1e-4
    assert np.abs(again - alone).max() < 1e-4


async def test_a_burst_of_new_ideas_is_embedded_in_few_batches(api: Api, system: Any) -> None:
    """The embedder writes the ideas of a burst in batches (a batch goes when it is full or
    its first event has waited embedder.GATHER_S): each is found within 2 seconds, and the
    model ran far fewer times than ideas were created."""
    import orjson

    from tests.support.processes import LOG_DIR

    log = LOG_DIR / f"{system.amqp_prefix}-similar-embedder-0.log"
    before = log.stat().st_size
    made = await asyncio.gather(
        *(new_idea(api, f"Burst idea {i}: export the backlog as a spreadsheet") for i in range(24))
    )

    async def all_found() -> bool:
        got = await similar_to(api, "Export the backlog as a spreadsheet", limit=50)
        return {m["id"] for m in made} <= {g["idea"]["id"] for g in got}

    await until(all_found, within=2.0)
    with log.open("rb") as f:
        f.seek(before)
        batches = [
            line
            for line in (orjson.loads(raw) for raw in f if raw.startswith(b"{"))
            if line.get("event") == "embeddings_written"
        ]
    assert sum(b["events"] for b in batches) >= 24
    assert len(batches) <= 6, [b["events"] for b in batches]


def test_model_calls_are_few_and_padding_bounded() -> None:
    """Texts of like length share a model call (up to CHUNK); a long one does not pad short
    ones to its length (a call's padded tokens stay within PAD_WASTE of its own)."""
    from services.similar.embedding import CHUNK, PAD_WASTE, chunks

    assert [len(c) for c in chunks([12] * (CHUNK + 6))] == [CHUNK, 6]
    lengths = [10, 12, 11, 200, 15, 9, 250, 30]
    calls = chunks(lengths)
    assert sorted(i for c in calls for i in c) == list(range(len(lengths)))
    assert calls[0] == [5, 0, 2, 1, 4]  # the short ones, shortest first
    for c in calls:
        padded = len(c) * max(lengths[i] for i in c)
        assert padded <= PAD_WASTE * sum(lengths[i] for i in c)
    assert chunks([]) == []


async def test_similar_routes_are_served_by_the_search_process_in_the_idle_class(
    api: Api, system: Any, http: Any
) -> None:
    """The gateway sends the similar-ideas routes to the similar service's search process
    (`ims-similar`, SIMILAR_URLS), whose every thread runs in Linux's idle scheduling class
    (SIMILAR_SEARCH_IDLE, default on): the CPU it takes is the CPU the other requests leave.
    The ideas process does not serve them."""
    import os
    from pathlib import Path

    from libs.common.caller import Caller

    assert await similar_to(api, "Dark mode for the dashboard") is not None
    searcher = system.procs["similar"][0].pid
    threads = [int(t.name) for t in Path(f"/proc/{searcher}/task").iterdir()]
    assert len(threads) > 1  # the event loop's and its pools'
    assert {os.sched_getscheduler(t) for t in threads} == {os.SCHED_IDLE}
    ideas = system.procs["ideas"][0].pid
    assert os.sched_getscheduler(ideas) == os.SCHED_OTHER
    who = Caller(uuid.uuid4(), "W", "pro", "off", None, "k", frozenset({"ideas:read"}), "r1")
    headers = who.headers(system.internal_token)
    for base, status in ((system.service_url("ideas"), 404), (system.service_url("similar"), 200)):
        async with http.post(
            f"{base}{I}/similar", json={"title": "Dark mode"}, headers=headers
        ) as r:
            assert r.status == status, (base, await r.text())


async def low_priority_waits(system: Any, http: Any) -> dict[str, tuple[float, float]]:
    """`ims_gateway_low_priority_wait_seconds` by outcome: (count, sum of seconds)."""
    import re

    async with http.get(system.metrics_url("gateway") + "/metrics") as r:
        text = await r.text()

    def value(outcome: str, part: str) -> float:
        found = re.search(
            rf'ims_gateway_low_priority_wait_seconds_{part}\{{outcome="{outcome}"\}} (\S+)', text
        )
        return float(found.group(1)) if found else 0.0

    return {o: (value(o, "count"), value(o, "sum")) for o in ("quiet", "capped")}


@asynccontextmanager
async def held_reads(api: Api, system: Any, count: int) -> AsyncIterator[list[Any]]:
    """`count` customers reads in flight at once through the gateway, held by a table lock
    for half a second and while the block runs, then let go; they have answered (200) when it
    ends."""
    import psycopg2

    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:  # the reads block until the rollback below
            cur.execute("LOCK TABLE customers.customers IN ACCESS EXCLUSIVE MODE")
        reads = [
            asyncio.ensure_future(api.get("/api/v1/customers", check=False)) for _ in range(count)
        ]
        await asyncio.sleep(0.5)
        assert not any(read.done() for read in reads), "the reads were held"
        yield reads
    finally:
        conn.rollback()
        conn.close()
    assert all(r.status == 200 for r in await asyncio.gather(*reads))


async def test_a_similar_query_waits_its_turn_behind_other_requests(
    api: Api, system: Any, http: Any
) -> None:
    """The gateway forwards a similar query at once when it forwards nothing else; while it
    forwards another request, the similar query waits for it to end, at most
    LOW_PRIORITY_WAIT_MS (100 ms), then goes (docs/gateway.md#priorities); the waits show in
    `ims_gateway_low_priority_wait_seconds` by outcome."""
    import time

    before = await low_priority_waits(system, http)
    assert await similar_to(api, "Dark mode for the dashboard") is not None
    quiet = await low_priority_waits(system, http)
    assert quiet["quiet"][0] == before["quiet"][0] + 1
    assert quiet["capped"][0] == before["capped"][0]
    async with held_reads(api, system, 1) as reads:
        started = time.monotonic()
        r = await api.post(f"{I}/similar", json={"title": "Dark mode for the dashboard"})
        took = time.monotonic() - started
        assert r.status == 200 and not reads[0].done(), "the similar query waited for the read"
        assert took >= 0.095, f"the similar query went at once ({took:.3f} s)"
    capped = await low_priority_waits(system, http)
    assert capped["capped"][0] == quiet["capped"][0] + 1


async def test_similar_queries_go_at_most_four_at_a_time(api: Api, system: Any, http: Any) -> None:
    """Similar queries in flight hold the next one once there are `LOW_PRIORITY_CONCURRENCY`
    (4) of them: when the gateway falls quiet, the queries that waited go at most four at a
    time, not as one burst (docs/gateway.md#priorities). The first four go at once and are held
    in flight by a lock on the ideas table (the ideas service's lookup of their hits' Idea forms
    reads there); the fifth waits for them, its 100 ms, and goes as `capped`."""
    import psycopg2

    await new_idea(api, "Dark mode for the dashboard")

    async def found() -> bool:
        return bool(await similar_to(api, "Dark mode for the dashboard"))

    await until(found)
    await asyncio.sleep(0.2)  # the gateway's load of those calls is gone
    before = await low_priority_waits(system, http)
    body = {"title": "Dark mode for the dashboard"}
    conn = psycopg2.connect(system.database_url)
    try:
        with conn.cursor() as cur:  # the searches' lookups block until the rollback
            cur.execute("LOCK TABLE ideas.ideas IN ACCESS EXCLUSIVE MODE")
        first = [asyncio.ensure_future(api.post(f"{I}/similar", json=body)) for _ in range(4)]
        await asyncio.sleep(0.3)
        fifth = asyncio.ensure_future(api.post(f"{I}/similar", json=body))
        await asyncio.sleep(0.3)
        assert not any(f.done() for f in [*first, fifth]), "the searches were held"
        held = await low_priority_waits(system, http)
        assert held["quiet"][0] == before["quiet"][0] + 4, (before, held)
    finally:
        conn.rollback()
        conn.close()
    assert [r.status for r in await asyncio.gather(*first, fifth)] == [200] * 5
    after = await low_priority_waits(system, http)
    assert after["quiet"][0] == before["quiet"][0] + 4, (before, after)
    assert after["capped"][0] == before["capped"][0] + 1, (before, after)


async def test_a_similar_query_waits_while_the_gateway_has_been_loaded(
    api: Api, system: Any, http: Any
) -> None:
    """Nothing in flight is not enough when the moment before was loaded: after half a second
    with 4 requests in flight at once, a similar query sent as soon as they have answered
    waits until the gateway's load (the mean number in flight over about the last 100 ms)
    falls under 2, about 70 ms after they ended, not the 2 ms of quiet alone
    (docs/gateway.md#priorities); it counts as `quiet`, not `capped`."""
    before = await low_priority_waits(system, http)
    async with held_reads(api, system, 4):
        pass
    assert await similar_to(api, "Dark mode for the dashboard") is not None
    after = await low_priority_waits(system, http)
    assert after["quiet"][0] == before["quiet"][0] + 1
    assert after["capped"][0] == before["capped"][0]
    waited = after["quiet"][1] - before["quiet"][1]
    assert waited >= 0.02, f"the similar query went after {waited * 1000:.1f} ms"
