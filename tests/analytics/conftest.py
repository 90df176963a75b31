"""Fixtures of the analytics tests: a fresh workspace (exports count per workspace and hour)
with its direct row builder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.support.api import Workspace
from tests.support.processes import System

from .data import Db


@pytest.fixture
def db(ws: Workspace, system: System) -> Iterator[Db]:
    d = Db(system.database_url, ws.id)
    yield d
    d.close()


@pytest.fixture
async def starter(new_workspace: Any) -> AsyncIterator[Workspace]:
    yield await new_workspace(plan="starter")
