"""One sync write in the background at a time: the next batch embeds while Weaviate writes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class WriteBehind:
    """Writes run one after another, each in the background while the caller goes on.

    A write starts only after the one before it succeeded, so writes land in order and nothing
    is written after a failed one; the failure is raised by the next `start` or by `finish`.
    """

    def __init__(self) -> None:
        self._running: asyncio.Task[None] | None = None

    async def start(self, write: Coroutine[Any, Any, None]) -> None:
        """Wait for the write in progress (raising its failure), then begin `write`."""
        try:
            await self.finish()
        except BaseException:
            write.close()  # never started: no "coroutine was never awaited" warning
            raise
        self._running = asyncio.create_task(write)

    async def finish(self) -> None:
        """Wait for the write in progress; raise its failure."""
        running, self._running = self._running, None
        if running is not None:
            await running

    async def abandon(self, cause: BaseException) -> None:
        """The run failed with `cause`: let the write in progress end (a failure of its own is
        only logged: `cause` is what the run reports), or cancel it if the run was cancelled
        itself. Either way, what it had not recorded is redone by the next run."""
        running, self._running = self._running, None
        if running is None:
            return
        if not isinstance(cause, Exception):  # cancelled: shutting down
            running.cancel()
        await asyncio.wait([running])
        failure = None if running.cancelled() else running.exception()
        if failure is not None:
            log.warning("a sync write failed too, after %r: %r", cause, failure)
