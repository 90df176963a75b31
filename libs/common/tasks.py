"""Background loops that retry on errors must still stop when cancelled.

A library may turn the CancelledError of a cancelled query into an error of its own (aiopg
does when cancelling the server-side query fails). A loop that retries on `Exception` would then
live on through shutdown; `Task.cancelling()` still knows the task was asked to stop.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled(err: BaseException) -> None:
    """Re-raise as CancelledError when the current task has been cancelled."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError() from err
