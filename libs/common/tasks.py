"""Background loops that retry on errors must still stop when cancelled.

A library may turn the CancelledError of a cancelled query into an error of its own (aiopg
does when cancelling the server-side query fails), or swallow it (`asyncio.wait_for` on 3.11
does when the awaited result lands with the cancellation, and aiopg's queries run in it). A
loop that retries on `Exception`, or simply goes round again, would then live on through
shutdown; `Task.cancelling()` still knows the task was asked to stop.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled(err: BaseException | None = None) -> None:
    """Raise CancelledError when the current task has been cancelled (from `err`, the error a
    library made of it, if any). Called at the top of each round of a loop, it also ends the
    loop whose cancellation was swallowed."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError() from err
