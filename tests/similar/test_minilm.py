"""The transformer all-MiniLM-L6-v2 (`SIMILAR_MODEL=minilm`, docs/similar.md) on a system of its own,
whose processes these tests kill: its search texts embedded in a worker process in the idle
scheduling class and the embedder's model on an idle-class thread, both at a lower CPU
priority; a worker that dies holding texts loses no answer, and a dead one is replaced. (The
default model's quality on the labeled set, and its one number: test_quality.py, on the shared
system.)"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import Api
from tests.support.processes import LOG_DIR
from tests.webhooks.support import (
    PartSystem,
    stop_part_system,
    workspace_api,
)

from .test_similar import (
    I,
    model_processes,
    new_idea,
    similar_part_system,
    similar_to,
    until,
)


@pytest.fixture(scope="module")
async def minilm() -> AsyncIterator[PartSystem]:
    sys_ = await similar_part_system({"SIMILAR_MODEL": "minilm"})
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture
def api(minilm: PartSystem, http: Any, openapi: Any) -> Api:
    return workspace_api(minilm, http, openapi)[1]  # type: ignore[no-any-return]


async def test_searches_held_by_a_dying_search_worker_are_answered(
    api: Api, minilm: PartSystem
) -> None:
    """The texts a search worker held when it died are tried once more in a new worker: every
    search in flight answers 200, none a 5xx."""

    assert await similar_to(api, "Warm the search worker") is not None
    searcher = minilm.procs["similar"][0].pid

    async def started() -> bool:
        return "search" in model_processes(searcher)

    await until(started, within=30)
    worker = model_processes(searcher)["search"]
    long = "Our support team answers tickets about invoices all day long and more. " * 6
    searches = [
        asyncio.ensure_future(api.post(f"{I}/similar", json={"title": f"{i} {long}"}))
        for i in range(16)
    ]
    await asyncio.sleep(0.2)  # the texts reach the worker, a few of them each model call
    os.kill(worker, signal.SIGKILL)
    answers = await asyncio.gather(*searches)
    assert [a.status for a in answers] == [200] * 16, [a.body for a in answers]
    log = (LOG_DIR / f"{minilm.amqp_prefix}-similar-0.log").read_text()
    assert '"embed_worker_gone"' in log, "the worker died holding no text: nothing was retried"
    assert model_processes(searcher)["search"] != worker


async def test_model_runs_at_a_lower_priority_and_dead_processes_are_replaced(
    api: Api, minilm: PartSystem
) -> None:
    """The model runs outside the processes that answer requests: the search texts' in the
    search process's worker, SIMILAR_EMBED_NICE (default 10) below its parent's CPU priority,
    in the idle scheduling class (SIMILAR_SEARCH_IDLE, default on, as its parent) and on any
    CPU (a search waits for it); new ideas' in the embedder, a process of its own,
    SIMILAR_EMBED_NICE below the priority it started with, its event loop not in the idle class
    (it must not starve mid-transaction: its model thread is, tested below), and, where it may
    use two CPUs or more, on the last of them alone (SIMILAR_EMBED_CPU, default last). Killed,
    the worker is replaced at once and the embedder when started again: the next search
    answers and new ideas are still embedded."""
    assert await similar_to(api, "Warm the search worker") is not None
    searcher = minilm.procs["similar"][0].pid

    async def started() -> bool:
        return "search" in model_processes(searcher)

    await until(started, within=30)
    worker = model_processes(searcher)["search"]
    base = os.getpriority(os.PRIO_PROCESS, searcher)
    lower = min(base + 10, 19) - base  # nice stops at 19
    assert os.getpriority(os.PRIO_PROCESS, worker) - base == lower
    assert os.sched_getaffinity(worker) == os.sched_getaffinity(searcher)
    assert os.sched_getscheduler(worker) == os.SCHED_IDLE
    embedder = minilm.procs["similar-embedder"][0].pid
    ideas = minilm.procs["ideas"][0].pid  # started at the same priority as the embedder
    base = os.getpriority(os.PRIO_PROCESS, ideas)
    nice = os.getpriority(os.PRIO_PROCESS, embedder) - base
    assert nice == min(base + 10, 19) - base, f"the embedder runs {nice} below, not 10"
    allowed = os.sched_getaffinity(ideas)
    pinned = {max(allowed)} if len(allowed) > 1 else allowed
    assert os.sched_getaffinity(embedder) == pinned
    assert os.sched_getscheduler(embedder) == os.sched_getscheduler(ideas)
    os.kill(worker, signal.SIGKILL)
    os.kill(embedder, signal.SIGKILL)
    minilm.procs["similar-embedder"][0].wait()
    await asyncio.sleep(0.5)  # the pool sees its worker gone
    assert await similar_to(api, "Any search at all") is not None
    await until(started, within=30)
    assert model_processes(searcher)["search"] != worker
    minilm.start_one("similar-embedder", 0)
    await minilm.wait_ready()
    idea = await new_idea(api, "Carbon footprint report per shipment")

    async def found() -> bool:
        got = await similar_to(api, "CO2 emissions of each delivery")
        return any(g["idea"]["id"] == idea["id"] for g in got)

    await until(found, within=60)  # the new embedder loads the model first


async def test_the_embedder_runs_its_model_on_an_idle_class_thread(
    api: Api, minilm: PartSystem
) -> None:
    """The embedder's model runs on a thread of its own in the idle scheduling class (the CPU
    nothing else wants); its event loop, which reads and writes PostgreSQL, keeps the
    process's class, so a transaction never waits for CPU the model was refused."""
    idea = await new_idea(api, "Archive old ideas in bulk")

    async def found() -> bool:
        got = await similar_to(api, "Move many stale ideas to the archive at once")
        return any(g["idea"]["id"] == idea["id"] for g in got)

    await until(found, within=60)
    ideas = minilm.procs["ideas"][0].pid
    embedder = minilm.procs["similar-embedder"][0].pid
    policies = {
        int(task.name): os.sched_getscheduler(int(task.name))
        for task in Path(f"/proc/{embedder}/task").iterdir()
    }
    assert policies[embedder] == os.sched_getscheduler(ideas), "the event loop's thread"
    assert os.SCHED_IDLE in policies.values(), f"no thread in the idle class: {policies}"
