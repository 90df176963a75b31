"""Fixtures of the webhook tests: a plain-HTTP receiver for the shared system."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.webhooks.support import Receiver


@pytest.fixture(scope="module")
async def receiver() -> AsyncIterator[Receiver]:
    r = await Receiver().start()
    yield r
    await r.stop()
