"""Answers run after the HTTP request is acknowledged; this keeps them and ends them cleanly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class BackgroundTasks:
    """Holds references to running answer tasks (asyncio keeps only weak ones)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Until every task started so far has finished (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self, timeout_s: float = 30.0) -> None:
        """Let answers in progress finish for up to `timeout_s`, then cancel the rest."""
        if not self._tasks:
            return
        log.info("waiting for %d Teams answer(s) in progress", len(self._tasks))
        try:
            await asyncio.wait_for(self.wait(), timeout_s)
        except TimeoutError:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            log.warning("cancelled Teams answers still running after %.0f s", timeout_s)
