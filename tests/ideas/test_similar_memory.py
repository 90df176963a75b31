"""On an ideas process of its own: the in-memory indexes' budget (`SIMILAR_INDEX_MEMORY_MB`,
docs/similar.md), beyond which the least recently searched workspaces' indexes are dropped and
load again when searched; and the model processes ending with a killed ideas process."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import LOG_DIR
from tests.webhooks.support import (
    PartSystem,
    start_part_system,
    stop_part_system,
    workspace_api,
)

from .test_similar import children_of, model_processes, new_idea, similar_to, until

IDEAS = [
    ("Dark mode for the dashboard", "Night theme, the white screens hurt my eyes"),
    ("Export reports as PDF", "Download my analytics as a printable document"),
    ("Single sign-on with Okta", "Log in through our identity provider"),
]


@pytest.fixture(scope="module")
async def tight() -> AsyncIterator[PartSystem]:
    # An index holds 1,024 rows at least: 1 MB holds two.
    sys_ = await start_part_system({"SIMILAR_INDEX_MEMORY_MB": "1"}, ("gateway", "ideas"))
    log = LOG_DIR / f"{sys_.amqp_prefix}-ideas-0.log"

    async def embedder_consuming() -> bool:
        # The ideas process answers before its embedder has loaded the model (about 2 s on a
        # busy machine): the 2-second freshness holds from then on.
        return '"embedder_started"' in log.read_text()

    await until(embedder_consuming, within=60)
    yield sys_
    await stop_part_system(sys_)


async def test_least_recently_searched_indexes_are_dropped_and_load_again(
    tight: PartSystem, http: Any, openapi: Any
) -> None:
    apis = [workspace_api(tight, http, openapi)[1] for _ in IDEAS]
    ideas = [await new_idea(api, title) for api, (title, _) in zip(apis, IDEAS)]
    for _ in range(2):  # the second round searches each workspace after its index was dropped
        for api, idea, (_, query) in zip(apis, ideas, IDEAS):

            async def found(api: Any = api, idea: Any = idea, query: str = query) -> bool:
                got = await similar_to(api, query)
                return [g["idea"]["id"] for g in got] == [idea["id"]]

            await until(found)
    log = (LOG_DIR / f"{tight.amqp_prefix}-ideas-0.log").read_text()
    assert log.count('"similar_index_evicted"') >= 4, "no index was dropped past the budget"
    assert log.count('"similar_index_loaded"') >= 6, "a dropped index was not loaded again"


async def test_model_processes_end_with_a_killed_ideas_process(
    tight: PartSystem, http: Any, openapi: Any
) -> None:
    """SIGKILL leaves the ideas process no time to stop its model processes: they notice it is
    gone and exit (the search worker and the embedder, and any helper multiprocessing started)."""
    api = workspace_api(tight, http, openapi)[1]
    await similar_to(api, "Start the search worker")
    ideas = tight.procs["ideas"][0].pid

    async def both() -> bool:
        return len(model_processes(ideas)) == 2

    await until(both, within=30)
    children = children_of(ideas)  # the model processes (and any helper of multiprocessing)
    os.kill(ideas, signal.SIGKILL)
    tight.procs["ideas"][0].wait()

    def alive(pid: int) -> bool:
        status = Path(f"/proc/{pid}/status")
        return status.exists() and "\nState:\tZ" not in status.read_text()

    async def all_gone() -> bool:
        return not any(alive(c) for c in children)

    await until(all_gone, within=5)
    tight.start_one("ideas", 0)  # for the module's clean stop
    await tight.wait_ready()
