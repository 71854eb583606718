"""After a down vote, the person's next message in that conversation is the "what was missing?"
comment. Kept in memory: a restart only loses the invitation, never a vote."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CommentKey:
    channel: str
    thread: str  # "" at the top level of a DM
    user: str


class PendingComments:
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
