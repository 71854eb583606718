"""The adapter's in-process state: work running after the ack, and comments being awaited."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


class Background:
    """Tasks started after Slack was acknowledged; kept referenced, drained on shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Wait for running work (and work it starts); cancel what is left at the deadline."""
        deadline = time.monotonic() + timeout_s
        while self._tasks:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("cancelling %d unfinished Slack tasks", len(self._tasks))
                for task in list(self._tasks):
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
                return
            await asyncio.wait(list(self._tasks), timeout=left)


@dataclass(frozen=True)
class CommentKey:
    channel: str
    thread_ts: str  # "" at the top level of a DM
    user: str


class PendingComments:
    """After a down vote, the person's next message in that thread is the "what was missing"
    comment. Kept in memory: a restart only loses the invitation, never a vote."""

    def __init__(self, ttl_s: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._waiting: dict[CommentKey, tuple[int, float]] = {}

    def expect(self, key: CommentKey, interaction_id: int) -> None:
        self._waiting[key] = (interaction_id, self._clock() + self._ttl)

    def peek(self, key: CommentKey) -> int | None:
        now = self._clock()
        self._waiting = {k: v for k, v in self._waiting.items() if v[1] > now}
        found = self._waiting.get(key)
        return found[0] if found else None

    def take(self, key: CommentKey) -> int | None:
        found = self.peek(key)
        self._waiting.pop(key, None)
        return found
