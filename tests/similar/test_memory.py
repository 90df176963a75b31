"""On a system of its own: the in-memory indexes' budget (`SIMILAR_INDEX_MEMORY_MB`,
docs/similar.md), beyond which the least recently searched workspaces' indexes are dropped and
load again when searched; and the transformer's worker ending with a killed search process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.processes import LOG_DIR
from tests.webhooks.support import (
    PartSystem,
    stop_part_system,
    workspace_api,
)

from .test_similar import (
    children_end_with_a_killed_process,
    new_idea,
    similar_part_system,
    similar_to,
    until,
)

IDEAS = [
    ("Dark mode for the dashboard", "Night theme, the white screens hurt my eyes"),
    ("Export reports as PDF", "Download my analytics as a printable document"),
    ("Single sign-on with Okta", "Log in through our identity provider"),
]


@pytest.fixture(scope="module")
async def tight() -> AsyncIterator[PartSystem]:
    # An index holds 1,024 rows at least: 1 MB holds two.
    sys_ = await similar_part_system({"SIMILAR_INDEX_MEMORY_MB": "1"})
    yield sys_
    await stop_part_system(sys_)


async def test_least_recently_searched_indexes_are_dropped_and_load_again(
    tight: PartSystem, http: Any, openapi: Any
) -> None:
    apis = [workspace_api(tight, http, openapi)[1] for _ in IDEAS]
    ideas = [await new_idea(api, title) for api, (title, _) in zip(apis, IDEAS, strict=True)]
    for _ in range(2):  # the second round searches each workspace after its index was dropped
        for api, idea, (_, query) in zip(apis, ideas, IDEAS, strict=True):

            async def found(api: Any = api, idea: Any = idea, query: str = query) -> bool:
                got = await similar_to(api, query)
                return [g["idea"]["id"] for g in got] == [idea["id"]]

            await until(found)
    log = (LOG_DIR / f"{tight.amqp_prefix}-similar-0.log").read_text()  # the search process
    assert log.count('"similar_index_evicted"') >= 4, "no index was dropped past the budget"
    assert log.count('"similar_index_loaded"') >= 6, "a dropped index was not loaded again"


async def test_model_processes_end_with_a_killed_search_process(
    tight: PartSystem, http: Any, openapi: Any
) -> None:
    """SIGKILL leaves the search process no time to stop the transformer's worker (the default
    model's): it notices its parent is gone and exits. (No process of the ideas service starts
    a model process any more; the embedder is a process of its own: test_similar.py.)"""
    api = workspace_api(tight, http, openapi)[1]
    await children_end_with_a_killed_process(tight, api, "similar", {"search"})
