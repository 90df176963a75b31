"""The transformer (`SIMILAR_MODEL=minilm`, docs/similar.md) on a system of its own: its quality
on the labeled set through the gateway; its search texts embedded in a worker process in the
idle scheduling class and the embedder's model on an idle-class thread, both at a lower CPU
priority; a worker that dies holding texts, and a killed ideas process, lose no answer and leave
no process behind."""

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
    children_end_with_a_killed_process,
    model_processes,
    new_idea,
    similar_part_system,
    similar_to,
    until,
)
from .test_similar_quality import labeled_set_holds, signal_records_the_search_similarity


@pytest.fixture(scope="module")
async def minilm() -> AsyncIterator[PartSystem]:
    sys_ = await similar_part_system({"SIMILAR_MODEL": "minilm"})
    yield sys_
    await stop_part_system(sys_)


@pytest.fixture
def api(minilm: PartSystem, http: Any, openapi: Any) -> Api:
    return workspace_api(minilm, http, openapi)[1]  # type: ignore[no-any-return]


async def test_labeled_set_held_out_part(api: Api) -> None:
    await labeled_set_holds(api, "minilm")


async def test_a_signal_records_the_similarity_the_search_answers(api: Api) -> None:
    await signal_records_the_search_similarity(api)


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
    """The model runs outside the processes that answer: the search texts' in the search
    process's worker, new ideas' in the ideas process's embedder, both SIMILAR_EMBED_NICE
    (default 10) below their parent's CPU priority; the search worker in the idle scheduling
    class (SIMILAR_SEARCH_IDLE, default on, as its parent), the embedder's event loop not (it
    must not starve mid-transaction: its model thread is, tested below); the embedder, where
    the ideas process may use two CPUs or more, on the last of them alone
    (SIMILAR_EMBED_CPU, default last), the search worker on any (a search waits for it);
    killed, both are replaced: the next search answers and new ideas are still embedded."""
    assert await similar_to(api, "Warm the search worker") is not None
    parents = {"search": minilm.procs["similar"][0].pid, "embedder": minilm.procs["ideas"][0].pid}

    def workers() -> dict[str, int]:
        return {
            name: pid
            for name, parent in parents.items()
            if (pid := model_processes(parent).get(name)) is not None
        }

    async def both() -> bool:
        return len(workers()) == 2

    await until(both, within=30)
    for name, pid in workers().items():
        parent = parents[name]
        base = os.getpriority(os.PRIO_PROCESS, parent)
        lower = min(base + 10, 19) - base  # nice stops at 19
        allowed = os.sched_getaffinity(parent)
        pinned = {max(allowed)} if len(allowed) > 1 else allowed
        nice = os.getpriority(os.PRIO_PROCESS, pid) - base
        assert nice == lower, f"the {name} process runs {nice} below its parent, not {lower}"
        cpus, expected = os.sched_getaffinity(pid), pinned if name == "embedder" else allowed
        assert cpus == expected, f"the {name} process runs on CPUs {cpus}, not {expected}"
        policy = os.sched_getscheduler(pid)
        wanted = os.SCHED_IDLE if name == "search" else os.sched_getscheduler(parent)
        assert policy == wanted, f"the {name} process runs in class {policy}, not {wanted}"
        os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.5)  # the pool sees its worker gone
    assert await similar_to(api, "Any search at all") is not None
    idea = await new_idea(api, "Carbon footprint report per shipment")

    async def found() -> bool:
        got = await similar_to(api, "CO2 emissions of each delivery")
        return any(g["idea"]["id"] == idea["id"] for g in got)

    await until(found, within=30)  # the embedder starts again and loads the model first
    await until(both, within=10)


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

    await until(found, within=30)
    ideas = minilm.procs["ideas"][0].pid
    embedder = model_processes(ideas)["embedder"]
    policies = {
        int(task.name): os.sched_getscheduler(int(task.name))
        for task in Path(f"/proc/{embedder}/task").iterdir()
    }
    assert policies[embedder] == os.sched_getscheduler(ideas), "the event loop's thread"
    assert os.SCHED_IDLE in policies.values(), f"no thread in the idle class: {policies}"


async def test_model_processes_end_with_a_killed_ideas_process(
    api: Api, minilm: PartSystem
) -> None:
    """SIGKILL leaves a process no time to stop its model processes: they notice it is gone
    and exit (the search process's worker, the ideas process's embedder, and any helper
    multiprocessing started)."""
    await children_end_with_a_killed_process(minilm, api, "similar", {"search"})
    await children_end_with_a_killed_process(minilm, api, "ideas", {"embedder"})
