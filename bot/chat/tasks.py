"""Work that runs after a platform was acknowledged: kept referenced, waited for, drained."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Busy(Exception):
    """The process has as much work in progress as it takes on; the platform should deliver
    this event again later (Slack does when it is not acknowledged)."""


class Background:
    """Tasks started after the ack (asyncio keeps only weak references to tasks).

    `limit` bounds the tasks in progress (0: no bound). A flood of events acknowledged faster
    than they are worked off would otherwise grow memory without end."""

    def __init__(self, name: str = "chat", limit: int = 0) -> None:
        self._name = name
        self._limit = limit
        self._tasks: set[asyncio.Task[None]] = set()
        self._refused = 0

    @property
    def full(self) -> bool:
        return 0 < self._limit <= len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Start `work`, or refuse it with Busy when `limit` tasks are in progress."""
        if self.full:
            work.close()  # never started: no "coroutine was never awaited" warning
            self._refused += 1
            if self._refused == 1 or self._refused % 100 == 0:
                log.warning("%s: %d tasks in progress, the limit; refused %d event(s) so far "
                            "(the platform delivers them again later)", self._name,
                            len(self._tasks), self._refused)
            raise Busy(f"{self._name}: {len(self._tasks)} tasks in progress")
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def wait(self) -> None:
        """Until every task started so far, and any task those start, has finished."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Let work in progress finish for up to `timeout_s`, then cancel what is left."""
        if not self._tasks:
            return
        log.info("waiting for %d %s task(s) in progress", len(self._tasks), self._name)
        try:
            await asyncio.wait_for(self.wait(), timeout_s)
        except TimeoutError:
            left = list(self._tasks)
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
            log.warning("cancelled %d %s task(s) still running after %.0f s", len(left),
                        self._name, timeout_s)
