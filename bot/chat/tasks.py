"""Work that runs after a platform was acknowledged: kept referenced, waited for, drained."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Background:
    """Tasks started after the ack (asyncio keeps only weak references to tasks)."""

    def __init__(self, name: str = "chat") -> None:
        self._name = name
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
